// The 3x3, stride-2 depthwise correlation and filter gradient on AVX2 from tap rows: each input
// row is split once into the three columns its taps read (X(y, 2 * ox + kx - left) for kx < 3,
// zero outside the plane and past the output row) in a ring of L1 rows, so that the arithmetic
// loads whole aligned vectors with no masks or permutes, where depthwise_direct_hwy.h's loop
// paid two loads and a cross-lane permute per tap (3528 -> see docs/x86-backend.md).
#pragma once

#include <cstddef>

#include "src/x86/depthwise_direct_hwy.h"

namespace neomeg::dnn::x86 {

// dw_direct_correlate for 3x3 taps of dilation 1 and stride 2 along both axes, where the CPU's
// target is AVX2; false (nothing written) elsewhere.
bool dw_s2_correlate3x3(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                        size_t ow, bool accumulate);

// dw_direct_filter_grad for the same taps, on the same condition.
bool dw_s2_filter_grad3x3(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh,
                          size_t ow, double* g);

}  // namespace neomeg::dnn::x86
