// A pointwise (1x1) float32 input gradient on plain NCHW tensors as the forward convolution from
// diff's OC channels to grad's IC ones, whose filter is the caller's read transposed (IC x OC).
// Both run oneDNN's gemm kernel (x64:gemm:jit) on the caller's memory, one product per image of
// pixels x IC x OC; the backward one reads the filter as the transposed operand of its sgemm, and
// where IC > OC on small images that cost it: 1024->256 on 14x14 at batch 32 took 37 ms against
// 33 ms for the forward kernel on the same product (one thread), below the blocked kernel with its
// reorders (34 ms). Where IC <= OC the backward kernel was as fast or 1-2% faster, so those stay.
// The transposed filter is a reorder into the primitive's plain weights, kept in the WeightCache
// while the filter's value stays the same. Measured in docs/x86-backend-log.md ("Pointwise input
// gradient as a forward convolution").
#pragma once

#include <memory>

#include "src/x86/conv_common.h"

namespace neomeg::dnn::x86 {

// Whether the input gradient of filter (OC, IC, 1...) from diff into grad runs as the forward
// convolution: diff and grad both keep their plain layout for the gemm kernel (pointwise_gemm's
// backward-data case) and IC > OC.
bool pointwise_backward_data_as_forward(const ConvDims& g, const TensorLayout& filter,
                                        const TensorLayout& diff, const TensorLayout& grad);

// That plan on tensors {filter, diff, grad}, or nullptr where oneDNN's forward is not its gemm
// kernel on those layouts (the caller then plans the backward primitive).
std::unique_ptr<Plan> pointwise_backward_data_plan(const HandleImpl& handle, const ConvDims& g,
                                                   const TensorLayout& filter,
                                                   const TensorLayout& diff,
                                                   const TensorLayout& grad);

}  // namespace neomeg::dnn::x86
