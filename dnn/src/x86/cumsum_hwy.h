// Float32 Cumsum of a block of lines, bit for bit naive's: each line accumulates in double in
// naive's order and rounds every output once. Columns adjacent in both src and dst (a dense
// (outer, axis, inner) view's inner > 1) scan the axis together as a vector (Highway, the
// instruction set chosen at run time); any other line, with any strides, negative included, is a
// scalar scan, since a parallel prefix would change the order.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// `cols` lines of `n` elements: line c's element i is src[c * src_col + i * src_step] and goes to
// dst[c * dst_col + i * dst_step] (steps in elements, of any sign).
struct CumsumLines {
    size_t n, cols;
    ptrdiff_t src_step, dst_step, src_col, dst_col;
    bool exclusive, reverse;  // leave element i out of output i; scan from the last element
};

void cumsum_f32(const float* src, float* dst, const CumsumLines& lines);

}  // namespace neomeg::dnn::x86
