// Element moves shared by the naive indexing kernels. Copies go through bytes so that one
// function serves every dtype; only the accumulating kernels dispatch on the element type.
#pragma once

#include <cstring>
#include <string>

#include "src/common/indexing.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive::indexing {

// dst[doff] = src[soff], element offsets; both tensors have the same dtype.
inline void copy_elem(const TensorND& dst, ptrdiff_t doff, const TensorND& src, ptrdiff_t soff) {
    auto sz = static_cast<ptrdiff_t>(dst.layout.dtype.size());
    std::memmove(static_cast<std::byte*>(dst.raw_ptr()) + doff * sz,
                 static_cast<const std::byte*>(src.raw_ptr()) + soff * sz, static_cast<size_t>(sz));
}

// Copies src into dst element by element (same shape, any strides); a no-op when both are the
// same view, which is how a caller asks for an in-place update.
inline void copy_tensor(const TensorND& dst, const TensorND& src) {
    if (dst.raw_ptr() == src.raw_ptr() && dst.layout.eq_layout(src.layout))
        return;
    for_each_index(dst.layout, [&](const auto& idx) {
        copy_elem(dst, offset_of(dst.layout, idx.data()), src, offset_of(src.layout, idx.data()));
    });
}

// Throws IndexError `who: index v is out of bounds for axis a with size s` for the first value of
// the int32 tensor `index` outside [0, size), or outside [-size, size) when negatives wrap.
inline void check_index_values(const TensorND& index, size_t axis, size_t size, bool negative_wraps,
                               const dnn::indexing::Who& who) {
    auto n = static_cast<int64_t>(size);
    for_each_offset(index.layout, [&](ptrdiff_t off) {
        int64_t v = elem<int32_t>(index, off);
        bool ok = v < n && v >= (negative_wraps ? -n : 0);
        NM_THROW_IF(!ok, IndexError, who, ": index ", v, " is out of bounds for axis ", axis,
                    " with size ", size);
    });
}

}  // namespace neomeg::dnn::naive::indexing
