// Where WarpPerspective reads for one output pixel: (oh, ow) mapped through a 3x3 matrix to a
// source point and its four bilinear taps folded by the border mode (border.h). Shared by the
// naive kernels and the x86 ones, which compute each point once for all channels.
#pragma once

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/border.h"

namespace neomeg::dnn::naive::warp {

struct Sample : border::BilinearPoint {
    double d = 0;  // the projection's denominator
};

inline Sample sample_of(const param::WarpPerspective& p, const double* m, size_t oh, size_t ow,
                        int64_t ih, int64_t iw) {
    auto h = static_cast<double>(oh), w = static_cast<double>(ow);
    double d = m[6] * w + m[7] * h + m[8];
    double x = (m[0] * w + m[1] * h + m[2]) / d;
    double y = (m[3] * w + m[4] * h + m[5]) / d;
    Sample s{border::bilinear_point(p.bmode, x, y, ih, iw)};
    s.d = d;
    return s;
}

}  // namespace neomeg::dnn::naive::warp
