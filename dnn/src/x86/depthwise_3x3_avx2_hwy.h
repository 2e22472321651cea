// The 3x3 depthwise loops of AVX2 that depthwise_direct_hwy.h's loops try first: the stride-2
// correlation (on AVX-512 too, after depthwise_3x3_avx512_hwy.h's) and the filter gradient of
// stride 1 and 2 (AVX2 only).
//
// With a stride of 2 a tap's columns along a row are every other column: the general loop paid
// two loads and ConcatEven (vshufps and a cross-lane vpermpd) per tap and vector; these load two
// pairs of vectors per input row and output vector, from which the three taps are the even and
// odd lanes within each 128-bit block (one vshufps each). The lanes then hold the outputs in a
// fixed order ({0, 1, 4, 5, 2, 3, 6, 7}), the same for every tap: the correlation accumulates in
// it and restores memory order once per stored vector, the filter gradient brings diff into it.
//
// The filter gradient walks bands of 4 rows of diff across whole rows, each input row loaded once
// per band it meets and the 9 sums in registers for the plane, so that the plane streams in
// memory order (the general loop walks one vector column down the plane at a time). With a
// stride of 2 it takes only taps 0 and 1 from an input row (two loads, two shuffles) and sums tap
// 2 as diff shifted by one output against tap 0's columns.
#pragma once

#include <cstddef>

#include "src/x86/depthwise_direct_hwy.h"

namespace neomeg::dnn::x86 {

// dw_direct_correlate for 3x3 taps of dilation 1 and stride 2 along both axes, where the CPU's
// target is AVX2 or AVX-512 (16 lanes, four blocks); false (nothing written) elsewhere.
bool dw_s2_correlate3x3(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                        size_t ow, bool accumulate);

// dw_direct_filter_grad for 3x3 taps of dilation 1 and stride `stride` (1 or 2) along both axes,
// where the CPU's target is AVX2 (stride 1 or 2) or AVX-512 (stride 2): bands of 4 rows of diff
// across the whole row (each input row loaded once per band it meets, the 9 sums in registers for
// the plane). AVX-512 takes it for planes read from memory, where its own column walk reads each
// row once per vector column.
bool dw_filter_grad3x3_avx2(size_t stride, const DwSource& x, const float* diff, ptrdiff_t diff_row,
                            size_t oh, size_t ow, double* g);

}  // namespace neomeg::dnn::x86
