// The bilinear taps of a source point, folded into the image by a border mode
// (src/common/border.h), shared by the warps that sample an image at arbitrary points
// (WarpPerspective, Remap) on naive and x86.
#pragma once

#include <cmath>
#include <cstdint>

#include "src/common/border.h"

namespace neomeg::dnn::naive::border {

using dnn::border::clamp_far;
using dnn::border::index;

// A source point (x, y) and its four bilinear taps: rows floor(y) + {0, 1} and columns
// floor(x) + {0, 1}, each folded into the image by the border mode (-1: the constant).
struct BilinearPoint {
    bool finite = false;
    double x = 0, y = 0;
    double fx = 0, fy = 0;  // x - floor(x), y - floor(y)
    int64_t row[2] = {}, col[2] = {};

    double weight(int i, int j) const { return (i ? fy : 1 - fy) * (j ? fx : 1 - fx); }
};

template <class Mode>
BilinearPoint bilinear_point(Mode mode, double x, double y, int64_t ih, int64_t iw) {
    BilinearPoint s;
    s.x = x;
    s.y = y;
    s.finite = std::isfinite(x) && std::isfinite(y);
    if (!s.finite)
        return s;
    double x0 = std::floor(x), y0 = std::floor(y);
    s.fx = x - x0;
    s.fy = y - y0;
    for (int k = 0; k < 2; ++k) {
        s.row[k] = index(mode, clamp_far(y0) + k, ih);
        s.col[k] = index(mode, clamp_far(x0) + k, iw);
    }
    return s;
}

}  // namespace neomeg::dnn::naive::border
