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
            size_t first = o * in[d] / out[d];
            size_t last = ((o + 1) * in[d] + out[d] - 1) / out[d];
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
