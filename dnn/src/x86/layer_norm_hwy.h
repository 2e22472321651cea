// Vectorised float32 layer normalisation over the rows of a dense (rows, len) matrix (Highway, the
// instruction set chosen at run time): a row's sums run in float32 vectors while the row sits in
// L1, the forward in two passes (mean, then the variance about it), the backward in two (the
// row's two sums, then dx). The backward also adds each row's dy * xhat and dy into caller-owned
// accumulators of len floats, the partial dweight and dbias of a block of rows.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Rows [begin, end): mean, rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd, times weight plus
// bias where weight is not null (bias then is not either).
void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t len, float eps);

// Rows [begin, end): with xhat = (x - mean) * rstd and g = dy * weight (dy without weight),
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). With weight, dw_acc[k] += dy * xhat and
// db_acc[k] += dy for each row, in row order.
void layer_norm_grad_rows(const float* dy, const float* x, const float* mean, const float* rstd,
                          const float* weight, float* dx, float* dw_acc, float* db_acc,
                          size_t begin, size_t end, size_t len);

}  // namespace neomeg::dnn::x86
