// The filter gradient of a bfloat16 1x1 convolution (ResNet's strided shortcuts) through oneDNN
// 2.6's gemm implementation rather than its first choice on AMX, jit:avx512_core_amx_bf16: raw
// primitives at one thread, CIFAR ResNet-18's 64->128, 128->256 and 256->512 shortcuts (stride 2):
// 1.00/1.10/1.75 ms against 0.65/0.49/0.78 ms at batch 32, 3.1/21.8/15.3 ms against
// 3.1/2.0/3.3 ms at batch 128; stride 1 alike. The gemm kernel also reads the plain NCHW
// tensors as they are, where the AMX one needs both reordered into blocked layouts. For filters
// larger than 1x1 it is the other way round (im2col: 10-60x slower on ResNet's 3x3 layers), and
// float32 already gets its jit_1x1 kernel.
//
// The input gradient of a strided one is a stride-1 one on the subsampled grid: dx is zero but
// at every s-th position, where it is the stride-1 input gradient of diff. Computing that, by the
// gemm kernel, into the strided view of a zeroed dx took 0.66/0.44/0.48 ms against 1.35/1.02/0.73
// ms for the strided AMX kernel with its reorders (batch 32), 4.3/1.8/2.1 against 19.3/12.2/3.1 ms
// (batch 128), plain NCHW memory in and out, one thread (a noisy machine: other runs swung 2x).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "src/x86/conv_common.h"

namespace neomeg::dnn::x86 {

// Whether a convolution with this filter (or filter gradient) layout is a bfloat16 1x1 one with
// no padding: every spatial filter dim 1.
inline bool pointwise_bf16(const TensorLayout& filter, const ConvDims& g) {
    if (filter.dtype != dtype::BFloat16)
        return false;
    for (size_t d = 2; d < filter.ndim; ++d)
        if (filter[d] != 1)
            return false;
    for (auto p : g.pad)
        if (p != 0)
            return false;
    return true;
}

// For a bfloat16 1x1 convolution (pointwise_bf16), the primitive descriptor make() gives moved
// on to oneDNN's gemm implementation; nullopt for other convolutions, or where oneDNN has no gemm
// kernel for make()'s descriptors.
template <class MakePd>
auto pointwise_bf16_gemm(const TensorLayout& filter, const ConvDims& g, MakePd&& make)
        -> std::optional<decltype(make())> {
    if (!pointwise_bf16(filter, g))
        return std::nullopt;
    auto pd = make();
    do {
        if (std::string_view(pd.impl_info_str()).find("gemm") != std::string_view::npos)
            return pd;
    } while (pd.next_impl());
    return std::nullopt;
}

// The stride-1 geometry and the view of `grad` (every stride-th element of each spatial axis,
// diff's spatial shape) that a bfloat16 1x1 convolution's input gradient with a stride above 1
// is computed into; nullopt for other convolutions, where `grad` is not dense (contiguous or
// channels-last), which zeroing it whole needs, or where a stride does not divide its axis.
struct SubsampledGrad {
    ConvDims g;
    TensorLayout view;
};
std::optional<SubsampledGrad> subsampled_grad(const TensorLayout& filter, const TensorLayout& diff,
                                              const TensorLayout& grad, const ConvDims& g);

// A plan that zeroes the call's `grad` (its last tensor) and runs `inner`, planned for
// subsampled_grad's view and geometry, on (filter, diff, that view of grad).
std::unique_ptr<Plan> subsampled_grad_plan(std::unique_ptr<Plan> inner, const TensorLayout& view);

}  // namespace neomeg::dnn::x86
