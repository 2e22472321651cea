// The small float32 matrix product's rows in vectors of output columns (Highway, the instruction
// set chosen at run time): each lane accumulates one element of C in double, summed over K in
// order from zero, as naive does, so the results are naive's bit for bit (a product of two floats
// is exact in double, so a fused multiply-add rounds as naive's multiply then add).
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// C[i, j] = sum_p A[i, p] * B[p, j] for i < m, j < n, p < k, with B's and C's columns unit
// strided; the strides are in elements.
void small_matmul_rows_f32(const float* a, const float* b, float* c, size_t m, size_t n, size_t k,
                           ptrdiff_t a_row, ptrdiff_t a_col, ptrdiff_t b_row, ptrdiff_t c_row);

}  // namespace neomeg::dnn::x86
