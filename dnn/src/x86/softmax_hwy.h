// Vectorised float32 softmax and log-softmax, forward and backward (Highway, the instruction set
// chosen at run time), along the middle axis of a dense (outer, len, inner) tensor: every float32
// call of the x86 operators (softmax.cpp). Everything runs in float32 vectors; log-softmax's
// forward, whose values are printed losses, sums with TwoSum (rows within a span of 15: in double
// lanes) and takes log1p of the sum less the maximum's 1, within 1 ULP of the exact value
// (docs/x86-backend.md, "Accuracy contracts"); rows holding a NaN or an infinity take naive's loop
// in double, columns give naive's NaNs from the arithmetic itself.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// The columns of one unit of work when softmax.cpp splits a (len, inner) slice over threads (a
// cache line of floats); one call of the *_cols functions takes any number of columns.
inline constexpr size_t kSoftmaxColumns = 16;

// Forward softmax y = exp(x - max) / sum(exp(x - max)), or with `log` log-softmax
// y = x - max - log(sum(exp(x - max))): rows [row_begin, row_end) of a (rows, len) matrix
// (inner == 1), len >= 1, each row dense, row r of x at x + r * x_row (of y likewise): a strided
// view's rows such as x[:, :1000] run where they are.
void softmax_rows(const float* x, ptrdiff_t x_row, float* y, ptrdiff_t y_row, size_t row_begin,
                  size_t row_end, size_t len, bool log);
// The same forwards down columns [col_begin, col_end) of one (len, inner) slice: the reduction
// runs down the columns, vectors across them (a strip of one to four vectors at a time, its
// statistics in registers).
void softmax_cols(const float* x, float* y, size_t len, size_t inner, size_t col_begin,
                  size_t col_end, bool log);

// Backward from the forward's output y and its gradient dy: dx = y (dy - sum(dy y)), or with `log`
// dx = dy - exp(y) sum(dy). The same two shapes.
void softmax_grad_rows(const float* y, ptrdiff_t y_row, const float* dy, ptrdiff_t dy_row,
                       float* dx, ptrdiff_t dx_row, size_t row_begin, size_t row_end, size_t len,
                       bool log);
void softmax_grad_cols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                       size_t col_begin, size_t col_end, bool log);

}  // namespace neomeg::dnn::x86
