// The element order shared by Argsort and TopK: ascending is a stable sort in which NaN is larger
// than every number (NaNs last); descending is its exact reverse (NaNs first, equal values in
// descending position). That is MegEngine 1.13's order: its kernels compare (value, position)
// pairs as a whole, with std::greater for descending, so F.topk(x, k, descending=True) of tied
// values picks the last ones (FreeAnchor's top-k IoU anchors depend on it).
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

// Positions 0..n-1 of `line` in that order.
template <class V>
std::vector<size_t> sorted_positions(const std::vector<V>& line, bool descending) {
    std::vector<size_t> order(line.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return nan_last_less(line[a], line[b]); });
    if (descending)
        std::reverse(order.begin(), order.end());
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
