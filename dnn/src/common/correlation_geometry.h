// Correlation's sizes from its params and data1's shape, shared by the layout rule and every
// backend's kernel so that all place the windows alike: output pixel (y, x) centres data1's
// window at (y, x) * stride1 + r + max_displacement - pad_size (r the window's radius), and
// displacement channel d moves data2's window by ((d / side) - R, (d % side) - R) * stride2.
#pragma once

#include <cmath>
#include <cstdint>

#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn::correlation {

struct Geometry {
    int64_t n = 0, c = 0, h = 0, w = 0;  // data1 and data2
    int64_t out_h = 0, out_w = 0;        // dst's pixels
    int64_t radius = 0;                  // the window's, (kernel_size - 1) / 2
    int64_t grid_radius = 0;             // R: displacements per side, max_displacement / stride2
    int64_t grid_side = 0;               // 2R + 1
    int64_t stride1 = 1, stride2 = 1;
    int64_t origin = 0;  // data1's window centre of output pixel 0, per axis
    double norm = 1;     // kernel_size^2 * C, the divisor of every sum

    int64_t channels() const { return grid_side * grid_side; }
    // The displacement of channel d, down (dy) and across (dx), in pixels.
    int64_t dy(int64_t d) const { return (d / grid_side - grid_radius) * stride2; }
    int64_t dx(int64_t d) const { return (d % grid_side - grid_radius) * stride2; }
    // data1's window centre of output row y (column x likewise).
    int64_t centre(int64_t o) const { return o * stride1 + origin; }
};

// The output side along one axis: ceil((len + 2 pad - 2 border) / stride1), in float32 as
// MegDNN (a non-positive result means no output, which the layout rule rejects).
inline int64_t out_len(int64_t len, const param::Correlation& p) {
    int64_t border = static_cast<int64_t>(p.max_displacement) + (p.kernel_size - 1) / 2;
    int64_t span = len + 2 * static_cast<int64_t>(p.pad_size) - 2 * border;
    return static_cast<int64_t>(
            std::ceil(static_cast<float>(span) / static_cast<float>(p.stride1)));
}

inline Geometry geometry(const param::Correlation& p, const TensorShape& data) {
    Geometry g;
    g.n = static_cast<int64_t>(data[0]);
    g.c = static_cast<int64_t>(data[1]);
    g.h = static_cast<int64_t>(data[2]);
    g.w = static_cast<int64_t>(data[3]);
    g.radius = (p.kernel_size - 1) / 2;
    g.stride1 = p.stride1;
    g.stride2 = p.stride2;
    g.grid_radius = p.max_displacement / p.stride2;
    g.grid_side = 2 * g.grid_radius + 1;
    g.origin = g.radius + static_cast<int64_t>(p.max_displacement) - p.pad_size;
    g.out_h = out_len(g.h, p);
    g.out_w = out_len(g.w, p);
    g.norm = static_cast<double>(p.kernel_size) * p.kernel_size * static_cast<double>(g.c);
    return g;
}

// d|a - b| / da and d|a - b| / db as MegDNN takes them (-1 for both at a tie).
inline double abs_slope_a(double a, double b) {
    return a > b ? 1.0 : -1.0;
}
inline double abs_slope_b(double a, double b) {
    return a >= b ? -1.0 : 1.0;
}

}  // namespace neomeg::dnn::correlation
