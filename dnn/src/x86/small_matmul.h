// float32 matrix products too small for oneDNN: below kSmallMatmulWork multiply-adds its call
// (argument maps, an execution context per call) costs more than the arithmetic, which made an
// 8x8 product about 0.3 us slower than PyTorch's. A loop over the operands' own strides
// accumulates in double in naive's order, so its results are naive's bit for bit; where B's and
// C's columns are unit strided (the usual case) it runs vectors of columns (small_matmul_hwy.h),
// since the scalar loop alone still left the 8x8 product 1.1x PyTorch's per-call time.
#pragma once

#include <memory>
#include <span>

#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The most multiply-adds (M * N * K) the loop takes; past it oneDNN's kernels win.
inline constexpr size_t kSmallMatmulWork = 1024;

// The loop's plan for C = op(A) op(B) on 2-D float32 layouts, or nullptr where it does not apply
// (another dtype or rank, more work than kSmallMatmulWork, an empty product).
std::unique_ptr<Plan> small_matmul_plan(const TensorLayout& a, const TensorLayout& b,
                                        const TensorLayout& c, bool trans_a, bool trans_b);

}  // namespace neomeg::dnn::x86
