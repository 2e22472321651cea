// Strided element walks shared by the naive kernels. Clear rather than fast: one index
// increment per element.
#pragma once

#include <array>
#include <cstddef>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::naive {

// Element offset of multi-index `idx` (ndim entries) in `layout`.
inline ptrdiff_t offset_of(const TensorLayout& layout, const size_t* idx) {
    ptrdiff_t off = 0;
    for (size_t i = 0; i < layout.ndim; ++i)
        off += static_cast<ptrdiff_t>(idx[i]) * layout.stride[i];
    return off;
}

// Calls f(idx) for every multi-index of `shape` in row-major order; idx is a std::array.
template <class F>
void for_each_index(const TensorShape& shape, F&& f) {
    if (shape.is_empty())
        return;
    std::array<size_t, TensorShape::MAX_NDIM> idx{};
    size_t n = shape.total_nr_elems();
    for (size_t k = 0; k < n; ++k) {
        f(static_cast<const std::array<size_t, TensorShape::MAX_NDIM>&>(idx));
        for (size_t d = shape.ndim; d-- > 0;) {
            if (++idx[d] < shape.shape[d])
                break;
            idx[d] = 0;
        }
    }
}

// Calls f(offset) with the element offset of every element of `layout`, in row-major order.
template <class F>
void for_each_offset(const TensorLayout& layout, F&& f) {
    for_each_index(layout, [&](const auto& idx) { f(offset_of(layout, idx.data())); });
}

// Reference to the element at element offset `off` of tensor t.
template <class T>
T& elem(const TensorND& t, ptrdiff_t off) {
    return static_cast<T*>(t.raw_ptr())[off];
}

}  // namespace neomeg::dnn::naive
