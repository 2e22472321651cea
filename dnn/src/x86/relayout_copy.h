// The x86 element copy between any two layouts of one shape and dtype (relayout.cpp): Relayout's
// kernel, and Concat's and Split's, which copy each slab into or out of a view of the big tensor.
#pragma once

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::x86 {

// Copies src's elements into dst (same shape and dtype, not overlapping) and returns the kernel
// it ran ("rows", "turned", "tiled", "fill" or "strided"), or returns nullptr, copying nothing,
// where it cannot (dtypes differ).
const char* relayout_copy(const TensorND& src, const TensorND& dst);

// The slab [begin, begin + len) of t along axis, as a view of t's storage.
inline TensorND slab(const TensorND& t, size_t axis, size_t begin, size_t len) {
    TensorLayout l = t.layout;
    l.shape[axis] = len;
    auto* p = static_cast<std::byte*>(t.raw_ptr()) + static_cast<ptrdiff_t>(begin) *
                                                             l.stride[axis] *
                                                             static_cast<ptrdiff_t>(l.dtype.size());
    return TensorND(p, l);
}

}  // namespace neomeg::dnn::x86
