// A pointwise (1x1) float32 convolution's forward or input gradient on small contiguous NCHW
// images as one batched oneDNN matmul (its brgemm kernel) on the caller's memory: per image
// out (C_out x pixels) = filter (C_out x C_in) x in (C_in x pixels), the filter one matrix
// broadcast over the batch (the forward's filter as it is; the input gradient's transposed, a
// reorder kept in the WeightCache while its value stays the same). Below kMinPointwiseGemmPixels
// both oneDNN's gemm convolution (one sgemm per image, a product as long as its pixels) and the
// blocked 1x1 kernel with its reorders in and out lose to it where the pixels fill whole vectors
// of 16: on 8x8 images (256->256, 128->128, 512->512, 1024->256, 256->1024 at batch 32) it was
// 1.06-1.12x the better of the two, on 4x4 1.02-1.08x; on 7x7, 9x9 and 10x10 it tied or lost
// (2048->512 on 7x7 by 1.3x against the blocked kernel), so those stay as they were. Measured in
// docs/x86-backend.md ("Small pointwise images as one batched matmul").
#pragma once

#include <memory>

#include "src/x86/conv_common.h"

namespace neomeg::dnn::x86 {

// The pixel counts that take the matmul are multiples of this (an AVX-512 vector of floats).
inline constexpr size_t kPointwiseMatmulPixelStep = 16;

// Whether the pointwise convolution from `in` (src, or diff in the input gradient) to `out` (dst,
// or grad) runs as the batched matmul: float32, both contiguous, fewer than
// kMinPointwiseGemmPixels pixels per image and a multiple of kPointwiseMatmulPixelStep.
bool pointwise_matmul(const ConvDims& g, const TensorLayout& in, const TensorLayout& out);

// That plan for `pass` (forward: tensors {src, filter, dst}; backward_data: {filter, diff, grad}),
// or nullptr where oneDNN's matmul on those layouts is not its brgemm kernel (below AVX-512): the
// caller then plans the convolution as before.
std::unique_ptr<Plan> pointwise_matmul_plan(const HandleImpl& handle, ConvPass pass,
                                            const TensorLayout& filter, const TensorLayout& in,
                                            const TensorLayout& out);

}  // namespace neomeg::dnn::x86
