// Walks shared by the naive kernels that work along one axis (Reduce, Argmax, Argmin, Cumsum,
// Argsort, TopK).
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "neomeg/dnn/dtype.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {

// Calls f(off) once per line along `axis` of `shape`, where off(layout) is the element offset in
// `layout` of the line's first index (every index of shape with that axis pinned to 0). The
// layouts may have the axis at any length, or lack it when it is the last one.
template <class F>
void for_each_axis_line(const TensorShape& shape, size_t axis, F&& f) {
    TensorShape outer = shape;
    outer[axis] = 1;
    for_each_index(outer, [&](const auto& idx) {
        f([&](const TensorLayout& l) { return offset_of(l, idx.data()); });
    });
}

template <class V>
bool is_nan(V v) {
    if constexpr (std::is_floating_point_v<V>)
        return std::isnan(v);
    else
        return false;
}

// Reads element `off` of t as its compute type (float for float16/bfloat16).
template <class T>
compute_type_t<T> load(const TensorND& t, ptrdiff_t off) {
    return static_cast<compute_type_t<T>>(elem<T>(t, off));
}

// Writes a float result (computed in double) into a float tensor element.
template <class T>
void store_float(const TensorND& t, ptrdiff_t off, double v) {
    elem<T>(t, off) = static_cast<T>(static_cast<float>(v));
}

}  // namespace neomeg::dnn::naive
