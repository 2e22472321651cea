// The 3x3, stride-1, left-padding-1 depthwise correlation on AVX-512 from an aligned copy of the
// plane: the window's column shifts come from register permutes (valignd) of aligned vectors
// instead of unaligned loads, three of every four of which split a cache line on a plain NCHW
// plane (in cache, 56x56: 2050 -> about 1250 TSC cycles per plane, copy included). Since
// depthwise_3x3_avx512_hwy.h makes the same shifts from the rows in place (no copy: 950 -> 730
// ns per plane), depthwise_direct_hwy.cpp calls this only where those loops decline (rows of over
// 1024 outputs, stride 1); its stride-2 loop is no longer called.
#pragma once

#include <cstddef>

#include "src/x86/depthwise_direct_hwy.h"

namespace neomeg::dnn::x86 {

// dw_direct_correlate for 3x3 taps of dilation 1 and stride `stride` (1 or 2) along both axes
// with x.left == 1, where the CPU has AVX-512 and the plane's copy fits the per-thread buffer;
// false (nothing written) elsewhere. A stride of 2 copies each row's even and odd columns apart,
// so that its taps are an even vector, an odd one and an odd one shifted by a lane.
bool dw_aligned_correlate3x3(size_t stride, const DwSource& x, const float* w, float* out,
                             ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate);

}  // namespace neomeg::dnn::x86
