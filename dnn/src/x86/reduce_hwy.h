// Vectorised float32 Reduce over the middle axis of a dense (outer, axis, inner) view (Highway,
// the instruction set chosen at run time). Like naive, values accumulate in double and round once;
// MAX/MIN propagate NaN.
#pragma once

#include <cstddef>

#include "neomeg/dnn/params/reduce.h"

namespace neomeg::dnn::x86 {

using ReduceMode = param::Reduce::Mode;

// Whether reduce_f32 computes this mode.
bool reduce_f32_supported(ReduceMode mode);

// dst[o * inner + i] = reduction over k < axis of src[(o * axis + k) * inner + i], for outer rows
// o in [outer_begin, outer_end) and every i < inner; axis >= 1.
void reduce_f32(ReduceMode mode, const float* src, float* dst, size_t outer_begin, size_t outer_end,
                size_t axis, size_t inner);

// The accumulator of one dense run of n >= 1 elements, before MEAN divides: the sum (of squares
// for SUM_SQR), the product or the extreme, in double; runs of one row reduce apart and combine.
double reduce_f32_run(ReduceMode mode, const float* src, size_t n);

// Two runs' accumulators combined, as reduce_f32 combines its vector lanes.
double reduce_combine(ReduceMode mode, double a, double b);

}  // namespace neomeg::dnn::x86
