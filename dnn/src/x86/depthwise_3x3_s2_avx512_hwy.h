// The 3x3 stride-2 depthwise loops of AVX-512 with one column of left padding (MobileNet's
// downsampling layers), which depthwise_direct_hwy.h's loops try first.
//
// Output o's taps along a row read columns 2o - 1, 2o and 2o + 1. The loops load each input row
// in vectors from column 0, so that every load starts where a row starts (on a 64-byte boundary
// for every other row of a 56-column plane) instead of one column to its left, and split each
// pair into its even and odd columns (ConcatEven, ConcatOdd): tap 1 is the even vector, tap 2 the
// odd one and tap 0 the odd one moved up a lane (valignd, the previous pair's last odd column in
// lane 0), all in memory order. The block-order loads of depthwise_3x3_avx2_hwy.h cost four
// loads per row and vector, each across two cache lines, and measured half this speed in cache.
// The filter gradient sums tap 0 as diff moved down one output against the odd vector instead of
// shifting the input (one more load per diff row, none per input row).
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
                               const float* w, float* dx, ptrdiff_t dx_row, size_t h,
                               size_t width);

// Whether the CPU's target has dw_s2_grad_data3x3_avx512.
bool dw_s2_grad_data3x3_avx512_supported();

}  // namespace neomeg::dnn::x86
