// MAX pooling's backward for 2x2 windows that tile a float32 plane (stride 2, no padding), in
// vectors (Highway, the instruction set chosen at run time): two rows of windows load as even and
// odd lanes, each window's first maximum gets its gradient by selects. A block of windows that
// holds a NaN takes naive's rule (the first NaN is the maximum) one window at a time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// One plane: src and grad are `rows` x `cols`, dy is `out_rows` x `out_cols` (2 * out_rows <= rows,
// 2 * out_cols <= cols); grad gets dy at each window's first maximum and 0 elsewhere, the rows and
// columns past the last whole window included.
void max2x2_backward_plane(const float* src, const float* dy, float* grad, size_t rows, size_t cols,
                           size_t out_rows, size_t out_cols);

// The same on bfloat16 (`bf16`) or float16 planes, given as their bits: compared in float32
// (widened in registers, exactly), the gradient dy's bits where it goes and +0 elsewhere.
void max2x2_backward_plane16(bool bf16, const uint16_t* src, const uint16_t* dy, uint16_t* grad,
                             size_t rows, size_t cols, size_t out_rows, size_t out_cols);

}  // namespace neomeg::dnn::x86
