// MatrixMul and BatchedMatrixMul on int8 storage (Int8 or QuantizedS8 operands, Int32 or
// QuantizedS32 C) through the exact integer GEMM of gemm_s16_hwy.h: int32 sums wrapping modulo
// 2^32, as naive's truncated 64-bit sums do.
#pragma once

#include <memory>

#include "neomeg/dnn/tensor.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The plan for A (batch, M, K) @ B (batch, K, N) (2-D operands: one batch), either given
// transposed; nullptr where naive runs it: other dtypes, an empty operand, or a C whose columns
// are not unit-strided.
std::unique_ptr<Plan> int8_matmul_plan(const TensorLayout& a, const TensorLayout& b,
                                       const TensorLayout& c, bool trans_a, bool trans_b);

}  // namespace neomeg::dnn::x86
