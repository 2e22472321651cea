// Vectorised float32 log-softmax of contiguous rows (Highway, the instruction set chosen at run
// time), in double like naive: y = x - max - log(sum(exp(x - max))), rounded once. oneDNN 2.6's
// log-softmax is about 2e-6 off, visible in every printed loss.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Rows [row_begin, row_end) of a (rows, len) matrix, len >= 1.
void log_softmax_rows(const float* src, float* dst, size_t row_begin, size_t row_end, size_t len);

}  // namespace neomeg::dnn::x86
