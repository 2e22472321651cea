// The x86 element copy between any two layouts of one shape and dtype (relayout.cpp): Relayout's
// kernel, and Concat's and Split's, which copy each slab into or out of a view of the big tensor.
#pragma once

#include <memory>
#include <utility>

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

// f(dense_src, dense_dst) for a kernel written for contiguous operands, given strided ones (a
// slice x[:, :n], a reversed x[::-1], a broadcast or transposed view): src is copied into a
// contiguous buffer, and dst, where it is not contiguous itself, is a contiguous buffer copied
// back after f. One more pass over memory, not naive's scalar loop.
template <class F>
void through_dense_copies(const TensorND& src, const TensorND& dst, F&& f) {
    TensorLayout csrc = src.layout, cdst = dst.layout;
    csrc.init_contiguous_stride();
    cdst.init_contiguous_stride();
    auto src_copy = std::make_unique_for_overwrite<std::byte[]>(csrc.span_bytes());
    TensorND dense_src(src_copy.get(), csrc);
    relayout_copy(src, dense_src);
    if (dst.layout.is_contiguous()) {
        std::forward<F>(f)(dense_src, dst);
        return;
    }
    auto dst_copy = std::make_unique_for_overwrite<std::byte[]>(cdst.span_bytes());
    TensorND dense_dst(dst_copy.get(), cdst);
    std::forward<F>(f)(dense_src, dense_dst);
    relayout_copy(dense_dst, dst);
}

}  // namespace neomeg::dnn::x86
