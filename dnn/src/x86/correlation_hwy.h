// The vector loops of the x86 Correlation kernels (Highway, the instruction set chosen at run
// time), over dense float32 runs: a window row of data1 against a row of displacements' runs of
// data2 (channels-last, so a row of kernel_size pixels is one run), and the gradients' per-channel
// updates.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// out[k] = the sum of a[i] * b[k * step + i] (is_multiply) or of |a[i] - b[k * step + i]| over
// i < n, in float32 lanes, for k < count: several displacements along one row against one window
// row of a, each load of a shared by four displacements.
void corr_dot_many_f32(const float* a, const float* b, size_t step, size_t count, size_t n,
                       float* out);
void corr_absdiff_many_f32(const float* a, const float* b, size_t step, size_t count, size_t n,
                           float* out);

// acc[i] += alpha * x[i].
void corr_axpy_f32(float* acc, float alpha, const float* x, size_t n);

// acc[i] += alpha where p[i] > q[i], -alpha elsewhere (the slope of |a - b|, MegDNN's tie).
void corr_sign_acc_f32(float* acc, float alpha, const float* p, const float* q, size_t n);

}  // namespace neomeg::dnn::x86
