// MAX pooling's backward for 3x3 windows of stride 2 and padding 1 (ResNet's stem pooling) on
// planes with unit stride along W (plain NC[D]HW), in our own vector loop (Highway): a vector's
// lanes are consecutive output columns, each window's taps loaded as the even and odd columns of
// its three rows (tap column 0 from the loads one column left). Per window the winner (naive's
// rule: its first NaN, else its first maximum; padding never counts) is found by a chain of
// compares, and its gradient goes where it belongs at once:
// - column 2ox (tap column 1) belongs to window ox alone; odd column 2ox - 1 takes tap column 2 of
//   window ox - 1 (the winners moved one lane) and tap column 0 of window ox, so each grad row is
//   made whole in registers and stored interleaved;
// - row 2oy belongs to window row oy alone; row 2oy + 1 (tap row 2) is kept (even and odd columns
//   apart) until window row oy + 1 adds its tap row 0 to it before storing it.
// float32 walks strips of a vector's windows down bands of 8 window rows, so that row 2oy + 1 and
// its taps' row maxima stay in registers from window row oy to oy + 1 (each src row split into
// even and odd columns once); bfloat16, and planes with a NaN, go row by row.
// Every element is written once, its gradients added in naive's order (output row-major) from +0;
// src, diff and grad each stream through memory once, dst is not read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/x86/max_pool_hwy.h"

namespace neomeg::dnn::x86 {

// Whether max_pool_rows_backward takes windows g: no depth window (slices apart), 3x3/2 pad 1
// over height and width, and the output extents that window gives.
bool max_pool_rows_backward_takes(const PoolDims& g);

// One plane: src(z, y, x) at src[z * ss[0] + y * ss[1] + x], diff (g.out's shape) with ys and
// grad (src's shape) with gs likewise. An element's gradients add in float32 in naive's order
// from +0 (a -0 gradient gives +0), which rounds as naive's double sum does where at most two
// windows give it one; the elements of odd row and column take four and may differ in the last
// bit.
// cached: the call's tensors lie in the caches (a few MB in all), where walking whole planes
// beats bands of window rows (see kBandRows).
void max_pool_rows_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                            const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs,
                            const PoolDims& g, bool cached = false);

// The same on bfloat16 (its bits), compared and summed as float32 (exactly), each element's sum
// rounded to bfloat16 once as naive converts it. Rows are staged in buffers with -inf around them
// and read as 32-bit pairs of columns (even columns widened by a shift, odd ones by a mask), and
// grad rows are made in buffers, so that no lanes move.
void max_pool_rows_backward_bf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                                 const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                                 const PoolDims& g);

}  // namespace neomeg::dnn::x86
