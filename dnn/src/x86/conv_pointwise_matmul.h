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
// docs/x86-backend-log.md ("Small pointwise images as one batched matmul"). Below AVX-512 (AVX2)
// the matmul is oneDNN's gemm kernel, which on 8x8 and 4x4 beat the blocked kernel with its
// reorders by 1.05-1.2x and the gemm convolution on NCHW (whose input gradient reads the filter
// transposed) by up to 1.25x, and 10x10 too (kMinPointwiseSgemmMatmulPixels);
// docs/x86-backend-log.md ("Small pointwise images on AVX2: sgemm matmul; 32 channels blocked").
#pragma once

#include <memory>

#include "src/x86/conv_common.h"

namespace neomeg::dnn::x86 {

// The pixel counts that take the matmul are multiples of this (an AVX-512 vector of floats).
inline constexpr size_t kPointwiseMatmulPixelStep = 16;
// Below AVX-512 oneDNN's matmul is its sgemm (gemm:jit), which has no such step: there the pixel
// counts off it take the matmul from this many on. 10x10 (256->256, batch 32, one thread) took
// 4.8-4.9 ms as the matmul against 5.2-5.4 blocked with reorders and 4.8-5.3 for oneDNN's gemm
// convolution on NCHW; 7x7 (2048->512) took 46-48 against 39-45 blocked, so it stays blocked.
inline constexpr size_t kMinPointwiseSgemmMatmulPixels = 64;

// Whether the pointwise convolution from `in` (src, or diff in the input gradient) to `out` (dst,
// or grad) runs as the batched matmul: float32, both contiguous, fewer than
// kMinPointwiseGemmPixels pixels per image and a multiple of kPointwiseMatmulPixelStep (below
// AVX-512 also any count from kMinPointwiseSgemmMatmulPixels).
bool pointwise_matmul(const ConvDims& g, const TensorLayout& in, const TensorLayout& out);

// That plan for `pass` (forward: tensors {src, filter, dst}; backward_data: {filter, diff, grad}),
// or nullptr where oneDNN's matmul on those layouts is not its brgemm kernel (from AVX-512) or its
// gemm kernel (below): the caller then plans the convolution as before.
std::unique_ptr<Plan> pointwise_matmul_plan(const HandleImpl& handle, ConvPass pass,
                                            const TensorLayout& filter, const TensorLayout& in,
                                            const TensorLayout& out);

}  // namespace neomeg::dnn::x86
