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

}  // namespace neomeg::dnn::x86
