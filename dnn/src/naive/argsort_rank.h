// The element order shared by Argsort and TopK: a stable sort in which NaN is larger than every
// number, so ascending puts NaNs last and descending puts them first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "src/naive/reduce_walk.h"

namespace neomeg::dnn::naive {

template <class V>
bool nan_last_less(V a, V b) {
    return !is_nan(a) && (is_nan(b) || a < b);
}

// Positions 0..n-1 of `line`, ordered by value; equal values keep their order in the line.
template <class V>
std::vector<size_t> stable_rank(const std::vector<V>& line, bool descending) {
    std::vector<size_t> order(line.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return descending ? nan_last_less(line[b], line[a]) : nan_last_less(line[a], line[b]);
    });
    return order;
}

// The n elements of the line starting at element offset `off` with stride `stride`.
template <class T>
std::vector<compute_type_t<T>> read_line(const TensorND& t, ptrdiff_t off, size_t n,
                                         ptrdiff_t stride) {
    std::vector<compute_type_t<T>> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = load<T>(t, off + static_cast<ptrdiff_t>(i) * stride);
    return v;
}

}  // namespace neomeg::dnn::naive
