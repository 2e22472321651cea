// A pointwise (1x1) float32 filter gradient on plain NCHW tensors run one image at a time. The
// blocked 1x1 kernel (jit_1x1) is oneDNN's fastest at the products, but on plain tensors it needs
// src and diff reordered to its blocked layout first; for a whole batch of large images those
// copies are larger than the caches, so every byte goes to memory and back twice (the reorder
// writes it, the kernel reads it again), and the reorders took about as long as the kernel on 56x56
// images. One image's copies stay in the cache for the kernel; each image's gradient (OC x IC
// floats, small beside a large image's activations) is added to the first one's. On small images
// the per-image gradient's reorder and sum, and the kernel's fixed costs, cost more than the cache
// saves: those run whole. Measured in docs/x86-backend-log.md ("Pointwise filter gradient per
// image").
#pragma once

#include <memory>
#include <span>

#include "src/x86/conv_common.h"
#include "src/x86/conv_filter_chunks.h"

namespace neomeg::dnn::x86 {

// The fewest pixels per image that run per image: 28x28 (784) and larger won, 14x14 (196 pixels,
// 256 <-> 1024 channels) lost by 1.2x in chunks of 3 images, 16x16 tied in chunks of 2.
inline constexpr size_t kMinFilterPerImagePixels = 512;
// Below it, from kMinPointwiseFilterGemmPixels, a batch of two or more images runs oneDNN's gemm
// kernel in place (pointwise_gemm): the two ranges meet.
static_assert(kMinFilterPerImagePixels == kMaxPointwiseFilterGemmPixels);

// With more than one OpenMP thread, each image's reorders, kernel and sum each enter a parallel
// region, 4 per image where the whole batch enters 4 in all: an image of fewer than this many
// floats of src and diff together ((IC + OC) x pixels) runs whole. At two threads 32->64 on 32x32
// (98304 floats) took 1.2-2.6x longer per image; 64->64 on 56x56 (401408) won by 1.6x.
inline constexpr size_t kMinFilterPerImageFloatsThreaded = size_t(1) << 18;

// Whether the filter gradient in = {src, diff}, out = {grad} runs per image: a pointwise
// convolution (ConvDims::pointwise) of float32 contiguous tensors (a strided or channels-last one
// is copied whole by its operand anyway), at least two images of at least kMinFilterPerImagePixels,
// and above one thread (omp_get_max_threads() when planned) kMinFilterPerImageFloatsThreaded; only
// where oneDNN runs AVX-512 kernels (has_avx512_core()): below it gemm on the whole batch won
// (conv_common.h, pointwise_gemm).
bool pointwise_filter_per_image(const ConvDims& g, std::span<const TensorLayout> in,
                                std::span<const TensorLayout> out);

// The filter gradient as the plan `make` makes for one image, run on each image and summed;
// nullptr where `make` declines.
std::unique_ptr<Plan> per_image_filter_plan(std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out,
                                            const FilterGradPlanner& make);

}  // namespace neomeg::dnn::x86
