// Roll's shifts per axis of src, each in [0, size): what every kernel walks by (Roll::deduce_layout
// has checked the param against src).
#pragma once

#include <array>
#include <cstdint>

#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {

// k[d]: dst index i along d reads src index (i - k[d]) mod size; 0 on the axes not rolled, on
// empty ones, and where the shifts listed for an axis add up to a multiple of its size.
inline std::array<size_t, TensorLayout::MAX_NDIM> roll_shifts(const param::Roll& p,
                                                              const TensorLayout& src) {
    std::array<int64_t, TensorLayout::MAX_NDIM> sum{};
    auto ndim = static_cast<int64_t>(src.ndim);
    for (size_t i = 0; i < p.axis.size(); ++i) {
        auto d = static_cast<size_t>(p.axis[i] < 0 ? p.axis[i] + ndim : p.axis[i]);
        auto n = static_cast<int64_t>(src.shape[d]);
        if (n > 0)
            sum[d] = ((sum[d] + p.shift[i]) % n + n) % n;
    }
    std::array<size_t, TensorLayout::MAX_NDIM> k{};
    for (size_t d = 0; d < src.ndim; ++d)
        k[d] = static_cast<size_t>(sum[d]);
    return k;
}

}  // namespace neomeg::dnn
