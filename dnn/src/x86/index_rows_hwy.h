// The embedding lookup's copy (IndexingMultiAxisVec of one index tensor on axis 0 into a
// contiguous dst): dst row k is the table's row v[k], each index checked and wrapped in the same
// pass as the copy, the row moved in vectors of the instruction set chosen at run time (Highway).
// A memcpy call per 128-byte row and a separate min/max pass over the indices before the copies
// cost the audit's F.embedding 5-10% against PyTorch (docs/x86-backend-log.md, "Constant padding
// and embedding rows in vector moves").
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// dst's rows [b, e) of row_bytes each: row k a copy of the table's row v[k] (n rows, row_step
// bytes apart; v[k] in [-n, 0) counts from the end). Returns e, or the first k whose index lies
// outside [-n, n) (its row and the ones after it not written). With `stream`, dst's whole aligned
// vectors are written non-temporally, weakly ordered until stream_fence() (stream_copy_hwy.h): for
// a dst too large to stay cached, which plain stores would first read.
size_t copy_rows_by_index(void* dst, const void* table, ptrdiff_t row_step, size_t row_bytes,
                          int64_t n, const int32_t* v, size_t b, size_t e, bool stream);

}  // namespace neomeg::dnn::x86
