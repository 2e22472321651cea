// Shape rules shared by the pooling operators (fixed-window and adaptive, forward and backward)
// and their kernels. Spatial quantities are padded to three dims (D, H, W) as for convolution: a
// dim the rank lacks has size 1 and a window covering exactly that element.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/params/pooling.h"

namespace neomeg::dnn {

inline constexpr size_t kMaxPoolSpatial = 3;

// MegEngine's adaptive windows (megdnn's AdaptivePooling is a fixed-window Pooling): where
// in >= out, stride = in / out and window = in - (out - 1) * stride, so every window has one
// length and neighbours may overlap (7 -> 4: [0, 4), [1, 5), [2, 6), [3, 7)); where in < out,
// which MegEngine does not define, output o covers [floor(o * in / out), ceil((o + 1) * in / out)).
inline std::pair<size_t, size_t> adaptive_range(size_t in, size_t out, size_t o) {
    if (in >= out) {
        size_t stride = in / out, window = in - (out - 1) * stride;
        return {o * stride, o * stride + window};
    }
    return {o * in / out, ((o + 1) * in + out - 1) / out};
}

struct PoolGeometry {
    size_t spatial = 0;  // 1, 2 or 3
    size_t n = 0, c = 0;
    std::array<size_t, kMaxPoolSpatial> in{1, 1, 1}, out{1, 1, 1};
    bool adaptive = false;
    // Fixed-window pooling only.
    std::array<ptrdiff_t, kMaxPoolSpatial> window{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0};

    // The input positions [first, last) of output o's window in dim d before clipping to the
    // input; fixed windows may reach into the padding, adaptive ones never do.
    std::pair<ptrdiff_t, ptrdiff_t> range(size_t d, size_t o) const {
        if (adaptive) {
            auto [first, last] = adaptive_range(in[d], out[d], o);
            return {static_cast<ptrdiff_t>(first), static_cast<ptrdiff_t>(last)};
        }
        ptrdiff_t first = static_cast<ptrdiff_t>(o) * stride[d] - pad[d];
        return {first, first + window[d]};
    }
    // Number of positions in a full fixed window, padding included (AVERAGE's divisor).
    size_t window_size() const { return static_cast<size_t>(window[0] * window[1] * window[2]); }
};

// Validate src and the params and return the geometry; errors name `op`, its params and src.
PoolGeometry pooling_geometry(const OperatorBase& op, const param::Pooling& p,
                              const TensorLayout& src);
PoolGeometry adaptive_pooling_geometry(const OperatorBase& op, const param::AdaptivePooling& p,
                                       const TensorLayout& src);
// The contiguous dst layout of a geometry.
TensorLayout pool_dst_layout(const PoolGeometry& g, DType dtype);
// For the backward ops: dst and diff must both have the forward output's layout.
void check_pool_backward(const OperatorBase& op, const PoolGeometry& g, const TensorLayout& src,
                         const TensorLayout& dst, const TensorLayout& diff);

}  // namespace neomeg::dnn
