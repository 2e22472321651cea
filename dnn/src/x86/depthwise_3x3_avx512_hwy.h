// The 3x3 depthwise loops of AVX-512 for one row and column of padding (MobileNet's layers),
// which depthwise_direct_hwy.h's loops and depthwise_conv.cpp try first. On a plain NCHW row the
// general loops load each tap's vector from its own column, one of which starts a column left of
// the row and splits a cache line per load, and kept the filter gradient's sums on the stack;
// these load every input row in vectors from its start (every other row of a 56-column plane is
// 64-byte aligned) and make the taps in registers:
//
// - stride 1, correlation (forward, backward data): the taps of output m read columns m - 1, m,
//   m + 1, made from vectors j - 1, j, j + 1 of the row by valignd (no copy of the plane, which
//   depthwise_aligned_hwy.h's loop makes);
// - stride 1, filter gradient: tap kx's sum is that of the row's vector against diff loaded one
//   column right, in place or one column left (no shuffles);
// - stride 2 (columns 2o - 1, 2o, 2o + 1): each pair of vectors from column 32j splits into its
//   even and odd columns within 128-bit blocks (vshufps; the lanes then hold the outputs in
//   blocks::kBlockLane's order, depthwise_blocks_hwy-inl.h): tap 1 is the even vector, tap 2 the
//   odd one and tap 0 the odd one moved up an output (vpermt2ps with the previous pair's); the
//   filter gradient sums tap 0 as diff moved down an output against the odd vector instead;
// - stride 2, backward data: input column 2q is tap 1 of output q, 2q + 1 taps 2 of q and 0 of
//   q + 1 (the same along H), so each pair of input rows takes two rows of diff, each loaded in
//   place and one column right, and nine FMAs.
//
// In cache (one 56x56 plane, 1 thread, a harness around the loops, ns): stride-1 forward 950 ->
// 730, filter gradient 970 -> 620, stride-2 forward 590 -> 260, filter gradient 570 -> 230,
// backward data (the gather of depthwise_grad_data_hwy.h) 920 -> 210.
#pragma once

#include <cstddef>

#include "src/x86/depthwise_direct_hwy.h"

namespace neomeg::dnn::x86 {

// dw_direct_correlate for 3x3 taps of dilation 1, stride `stride` (1 or 2) along both axes and
// x.left == 1 (with a stride of 1 also x.w == ow), where the CPU's target is AVX-512; false
// (nothing written) elsewhere.
bool dw_correlate3x3_avx512(size_t stride, const DwSource& x, const float* w, float* out,
                            ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate);

// dw_direct_filter_grad for 3x3 taps of dilation 1, stride `stride` (1 or 2) along both axes
// and x.left == 1 (with a stride of 1 also x.w == ow), on the same condition.
bool dw_filter_grad3x3_avx512(size_t stride, const DwSource& x, const float* diff,
                              ptrdiff_t diff_row, size_t oh, size_t ow, double* g);

// The input gradient of 3x3 taps of dilation 1, stride 2 along both axes and one row and column
// of padding, of one output channel per input channel: dx (h x width, rows dx_row apart) from the
// channel's diff plane dy (oh x ow, rows dy_row apart) and its 9 taps w (the forward's
// orientation), where the CPU's target is AVX-512 and the input's size is the one the forward's
// windows give ((h + 1) / 2 == oh, the same along W); false (nothing written) elsewhere.
bool dw_s2_grad_data3x3_avx512(const float* dy, ptrdiff_t dy_row, size_t oh, size_t ow,
                               const float* w, float* dx, ptrdiff_t dx_row, size_t h, size_t width);

// Whether the CPU's target has dw_s2_grad_data3x3_avx512.
bool dw_s2_grad_data3x3_avx512_supported();

}  // namespace neomeg::dnn::x86
