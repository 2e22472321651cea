// Float32 Cumsum over the middle axis of a dense (outer, axis, inner) view, bit for bit naive's:
// each line accumulates in double in naive's order and rounds every output once. Across columns
// (inner > 1) a vector of columns scans the axis together (Highway, the instruction set chosen at
// run time); a single line is a scalar scan, since a parallel prefix would change the order.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Scans outer rows [outer_begin, outer_end); `exclusive` leaves element i out of output i,
// `reverse` scans from the last element.
void cumsum_f32(const float* src, float* dst, size_t outer_begin, size_t outer_end, size_t axis,
                size_t inner, bool exclusive, bool reverse);

}  // namespace neomeg::dnn::x86
