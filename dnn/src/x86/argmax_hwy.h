// Vectorised Argmax/Argmin of float32 over the middle axis of a dense (outer, axis, inner) view
// (Highway, the instruction set chosen at run time), with naive's rule: the first extreme element
// wins, and the first NaN beats everything. Each lane keeps naive's scan over its own elements
// (it stops at its first NaN); lanes then combine by value, then by lowest index.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// dst[o * inner + i] = the index k < axis of the extreme src[(o * axis + k) * inner + i], for
// outer rows o in [outer_begin, outer_end) and every i < inner; axis >= 1.
void arg_extreme_f32(bool find_max, const float* src, int32_t* dst, size_t outer_begin,
                     size_t outer_end, size_t axis, size_t inner);

}  // namespace neomeg::dnn::x86
