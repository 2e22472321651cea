// Where Remap reads for one output pixel: the point (x, y) of map_xy and its taps, bilinear
// (LINEAR) or the pixel its coordinates round to, halves to even (NEAREST), each tap folded into
// the image by the border mode (border.h, as WarpPerspective's). Shared by the naive kernels and
// the x86 ones, which compute each point once for all channels.
#pragma once

#include <cmath>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/border.h"

namespace neomeg::dnn::naive::remap {

// NEAREST has one tap, row[0] / col[0] with weight 1.
struct Point : border::BilinearPoint {
    bool nearest = false;
    double weight(int i, int j) const {
        return nearest ? (i == 0 && j == 0 ? 1.0 : 0.0) : BilinearPoint::weight(i, j);
    }
    // The number of taps per axis: 2 (LINEAR) or 1 (NEAREST).
    int taps() const { return nearest ? 1 : 2; }
};

inline Point point_at(const param::Remap& p, double x, double y, int64_t ih, int64_t iw) {
    Point pt{border::bilinear_point(p.border_type, x, y, ih, iw)};
    if (p.imode == param::Remap::InterpolationMode::NEAREST && pt.finite) {
        pt.nearest = true;
        // nearbyint rounds halves to even in the default rounding mode.
        pt.row[0] = border::index(p.border_type, border::clamp_far(std::nearbyint(y)), ih);
        pt.col[0] = border::index(p.border_type, border::clamp_far(std::nearbyint(x)), iw);
    }
    return pt;
}

}  // namespace neomeg::dnn::naive::remap
