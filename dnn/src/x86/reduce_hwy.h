// Vectorised float32 Reduce over the middle axis of a dense (outer, axis, inner) view (Highway,
// the instruction set chosen at run time). MAX/MIN are exact and propagate NaN; sums and products
// across rows (inner > 1), and PRODUCT on AVX2 and on targets without FMA, accumulate in double
// like naive and round once. PRODUCT along a row (inner == 1) on AVX-512 carries exact float
// pairs: within
// u |P| + n 2^-43 |P| of the exact product P (u = 2^-24), zeros, infinities, NaN and products
// beyond float's range as naive's (reduce_product_hwy.cpp). SUM, MEAN and SUM_SQR
// along a row (inner == 1) add kReduceFloatSteps float values per lane in float, then the lanes
// in double: with u = 2^-24, t the row's values (their squares for SUM_SQR) and S naive's double
// sum, the result is within kReduceFloatSteps u sum|t| + u |S| + n 2^-52 sum|t| of S (MEAN: all
// over n), infinities and NaN as naive's (a block whose float sum is not finite is summed again
// in double).
#pragma once

#include <cstddef>

#include "neomeg/dnn/params/reduce.h"

namespace neomeg::dnn::x86 {

using ReduceMode = param::Reduce::Mode;

// Float additions per lane before the lanes go into double accumulators (see above).
inline constexpr size_t kReduceFloatSteps = 8;

// Whether reduce_f32 computes this mode.
bool reduce_f32_supported(ReduceMode mode);

// dst[o * inner + i] = reduction over k < axis of src[(o * axis + k) * inner + i], for outer rows
// o in [outer_begin, outer_end) and every i < inner; axis >= 1.
void reduce_f32(ReduceMode mode, const float* src, float* dst, size_t outer_begin, size_t outer_end,
                size_t axis, size_t inner);

// dst[i] = reduction over k < axis of src[k * stride + i] for i < n: a stretch of one outer row's
// columns (inner > 1), so that few outer rows can split their columns across threads.
void reduce_f32_columns(ReduceMode mode, const float* src, float* dst, size_t axis, size_t stride,
                        size_t n);

// The accumulator of one dense run of n >= 1 elements, before MEAN divides: the sum (of squares
// for SUM_SQR), the product or the extreme, in double; runs of one row reduce apart and combine.
double reduce_f32_run(ReduceMode mode, const float* src, size_t n);

// The product of a row of n >= 1 values in exact float pairs (reduce_product_hwy.cpp), in double
// before rounding; false, with nothing computed, on AVX2 and on a target without native FMA.
bool reduce_f32_product_row(const float* src, size_t n, double* product);

// Two runs' accumulators combined, as reduce_f32 combines its vector lanes.
double reduce_combine(ReduceMode mode, double a, double b);

}  // namespace neomeg::dnn::x86
