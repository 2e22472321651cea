// Walking a tensor of any strides in row-major order as runs along its last axis: a run is part of
// one row (the index tuple over the other axes), addressed through each tensor's own strides. The
// x86 kernels that read several same-shaped tensors element by element (CondTake, NonZero) split
// the flat element range into chunks and walk each chunk's runs.
#pragma once

#include <algorithm>
#include <cstddef>

#include "neomeg/dnn/layout.h"

namespace neomeg::dnn::x86 {

// The element offset of row `r` of `l`, rows being the index tuples over its first `outer` axes.
inline ptrdiff_t row_offset(const TensorLayout& l, size_t outer, size_t r) {
    ptrdiff_t off = 0;
    for (size_t d = outer; d-- > 0;) {
        off += static_cast<ptrdiff_t>(r % l[d]) * l.stride[d];
        r /= l[d];
    }
    return off;
}

// Calls f(row, first, last, flat) for the runs covering flat elements [begin, end) of a tensor
// whose last axis has n > 0 elements: positions [first, last) of row `row`, the first of which is
// flat element `flat`.
template <class F>
void for_each_flat_run(size_t n, size_t begin, size_t end, F&& f) {
    size_t row = begin / n, i = begin % n;
    for (size_t flat = begin; flat < end; ++row, i = 0) {
        size_t last = std::min(n, i + (end - flat));
        f(row, i, last, flat);
        flat += last - i;
    }
}

}  // namespace neomeg::dnn::x86
