// What the oneDNN convolution kernels (convolution.cpp, conv_bias.cpp) share: which cases they
// take, the geometry in oneDNN's terms, descriptors and operands of the data and the filter.
#pragma once

#include <optional>

#include "src/common/convolution_geometry.h"
#include "src/x86/kernel.h"

namespace neomeg::dnn::x86 {

// A convolution's geometry in oneDNN's terms; oneDNN counts dilation as the gap between taps
// (ours minus one). Padding is symmetric, as in the param; oneDNN's shape rule floors like ours,
// so an input size that a strided convolution partly skips still matches.
struct ConvDims {
    memory::dims stride, dilate, pad;
    uint32_t group = 1;
    bool flip = false;  // CONVOLUTION mode: the filter is read reversed
    // A 1x1 kernel, stride 1, no padding, one group: per image a matrix product on NCHW.
    bool pointwise = false;
    // One group per input channel (any channel multiplier).
    bool depthwise = false;
    // The fewer of the input's and the output's channels (pointwise_gemm's AVX2 case).
    size_t min_channels = 0;
};

// The geometry, or nullopt where the kernels decline: src/filter/dst (in a backward op, the
// tensors in those roles) of different ranks or dtypes, a dtype oneDNN has no name for, or an
// empty tensor (oneDNN takes none).
std::optional<ConvDims> conv_geometry(const ConvArgs& args, const TensorLayout& src,
                                      const TensorLayout& filter, const TensorLayout& dst);

dnnl::primitive_attr user_scratchpad();

// Whether oneDNN runs kernels of ISA `want` here, as get_effective_cpu_isa() says (which
// ONEDNN_MAX_CPU_ISA caps).
bool onednn_runs_isa(dnnl::cpu_isa want);

// Whether oneDNN runs its AVX-512 kernels here (ONEDNN_MAX_CPU_ISA caps the answer): the 1x1
// plans' choices differ below it (kMaxBlockedPointwiseChannels, conv_pointwise_matmul.h).
bool has_avx512_core();

// A descriptor that lets the primitive choose the layout (format_tag::any), in the tensor's dtype.
memory::desc any_desc(const TensorLayout& l);

// The pass a convolution plan computes; forward_const_filter is a forward whose filter keeps its
// value between calls (a traced graph's constant), which Winograd transforms once (conv_algo.h).
enum class ConvPass { forward, forward_const_filter, backward_data, backward_filter };

// Whether `l`, a data tensor (src or dst) of `pass` of the convolution of geometry g, keeps its
// plain NCHW layout for oneDNN's gemm kernel (`x64:gemm:jit`), which reads and writes it in place,
// instead of the blocked 1x1 kernel with the reorders in and out: a contiguous float32 tensor of a
// pointwise convolution with at least kMinPointwiseGemmPixels per image, in the forward and
// backward-data passes; a strided tensor never (its operand reorders it either way). The gemm
// kernel multiplies one image at a time, a product as long as its pixels, and on small images it
// lost. Measured on ResNet-50's and the CIFAR MobileNet's 1x1 shapes at batch 32
// (docs/x86-backend-log.md, "Pointwise forward on plain NCHW"): the forward 1.07-1.7x faster than
// blocked plus reorders from 12x12 images on (one thread; two threads alike on a quiet machine),
// backward data 1.1-2.5x from 14x14 (where grad has more channels than diff, as the forward
// kernel: conv_pointwise_backward_data.h); on 7x7 and 4x4 gemm lost by 1.3x, on 8x8 and 10x10 the
// two came within 5-10% either way and stay blocked. At two threads sharing cores with other work
// the gemm forward had spells 8x slower than the blocked kernel (it seems to synchronise per
// image): pointwise_gemm's forward cases are the switch if that matters more. The filter gradient
// stays blocked: gemm won the 64->256, 128->128 and 128->512 shapes by 10-20% and lost 32->64 on
// 32x32 by 1.3x (2.5x at two threads), 256->64 on 56x56 and batch 1, with its two-thread times the
// most disturbed by a busy machine. Instead, from 512 pixels per image the filter gradient runs the
// blocked kernel one image at a time (conv_filter_per_image.h), which beat gemm on those shapes.
// Below that, from kMinPointwiseFilterGemmPixels to kMaxPointwiseFilterGemmPixels pixels and at
// least two images, the filter gradient runs gemm too: the blocked kernel's whole-batch reorders
// (as large as the activations) cost more than gemm loses on per-image products of 256 or more
// pixels (128->128 on 16x16 at batch 32: about 1.1x faster at one thread, at two within the
// noise). On 12x12 and 14x14 (144 and 196 pixels) the two tied within the noise and stay blocked;
// batch 1 too (256->64 on 56x56: gemm 1.4x slower at one thread). docs/x86-backend-log.md,
// "Pointwise filter gradient on gemm from 256 pixels". Below AVX-512 (AVX2: oneDNN 2.6's sgemm and
// its jit_1x1:avx2 kernel on 8-channel blocks) the forward and input gradient stay blocked where
// either activation has at most kMaxBlockedPointwiseChannels channels: on 32->64 32x32 images at
// batch 32 gemm took 2.9-3.1 ms (one thread) against 2.4-2.6 for the blocked kernel with its
// reorders, while from 64 channels on (64->64 56x56, 128->128 16x16, ...) gemm won by 1.3-1.5x
// there too. AVX-512 keeps gemm on them. docs/x86-backend-log.md, "Small pointwise images on AVX2:
// sgemm matmul; 32 channels blocked".
inline constexpr size_t kMaxBlockedPointwiseChannels = 32;
// The filter-gradient rules above were measured on AVX-512, where the blocked kernel is jit_1x1
// on 16-channel blocks. Where oneDNN runs no AVX-512 kernels (has_avx512_core(): an AVX2-only Zen
// 3), its AVX2 jit_1x1 kernel plus the reorders, whole or per image, lost to gemm on plain NCHW on
// the float32 1x1 filter gradients from 10x10 images up (0.70-0.95x at one thread: 32->64 on
// 32x32 by 1.3x, 256->1024 on 14x14 by 1.2x), batch 1 included; on 8x8 the two tied, on 7x7 and
// 4x4 gemm tied or lost. So there the filter gradient runs gemm from
// kMinPointwiseFilterGemmPixelsAvx2 pixels, any batch, and never per image.
// docs/x86-backend-log.md, "Pointwise filter gradient on gemm below AVX-512".
inline constexpr size_t kMinPointwiseGemmPixels = 128;
inline constexpr size_t kMinPointwiseFilterGemmPixels = 256;
inline constexpr size_t kMaxPointwiseFilterGemmPixels = 512;
inline constexpr size_t kMinPointwiseFilterGemmPixelsAvx2 = 64;
bool pointwise_gemm(ConvPass pass, const ConvDims& g, const TensorLayout& l);
// (Below kMinPointwiseGemmPixels, a forward or input gradient whose pixels are a multiple of 16,
// 8x8 and 4x4 among them, and below AVX-512 any count from 64, runs as one batched matmul
// instead: conv_pointwise_matmul.h.)
// any_desc, or the plain layout where pointwise_gemm says so.
memory::desc any_desc(const TensorLayout& l, const ConvDims& g, ConvPass pass);

// Whether `l`, one activation of the convolution of geometry g whose other activation is
// `partner` (src and dst; in the backward passes grad and diff, src and diff), is pinned to
// channels-last (nhwc/ndhwc), so that oneDNN runs an nhwc kernel:
// - both channels-last (eager mode keeps channels-last between operators): yes, and the caller's
//   memory is used as it is, with no reorder;
// - both plain: no;
// - one of each (a traced graph's transposed NHWC batch beside the graph's plain output; eager
//   mode's plain gradient seed beside a channels-last src): no, the primitive chooses and the
//   channels-last one is reordered in (or out), one pass as a copy would be, except
//   - depthwise: yes, the plain one reordered to channels-last. oneDNN's nhwc depthwise kernels
//     took 0.63-0.89x the time of its blocked ones plus the reorders with a channels-last src or
//     diff (bwd filter with a plain seed: 2.43 against 2.73 ms at one thread), and within the
//     noise the other way (docs/x86-backend-log.md, "Mixed layouts: nhwc only where both sides
//     are"); with one side pinned and the other `any` a depthwise filter gradient got only
//     `ref:any`;
//   - 1x1 (pointwise) where the channels-last tensor is the larger: yes, reordering the plain,
//     smaller one instead (the 1x1 kernels on nhwc run at the gemm's and blocked ones' speed, so
//     the reorder decides: 0.72-0.82x at one thread reordering the larger).
//   A 3x3 convolution's mix pinned to nhwc ran oneDNN's nhwc kernel and the plain side's reorder
//   2-4x slower at one thread, every pass, than the blocked or Winograd kernel with the
//   channels-last side reordered (8x32x56x56 -> 64 and 8x64x28x28 -> 64), and slower at two.
bool nhwc_pinned(const TensorLayout& l, const ConvDims& g, const TensorLayout& partner);
// That layout where nhwc_pinned, else any_desc(l, g, pass); never pinned for the Winograd
// algorithm, which oneDNN implements on blocked layouts only: a channels-last pair then runs
// Winograd between reorders instead of the direct nhwc kernel, which took 1.9-2.1x the time at
// one thread on AVX-512 (3x3 32->64 56x56 and 64->64 28x28, batch 8, every pass;
// docs/x86-backend-log.md, "Channels-last pairs of Winograd shapes"). Where the CPU has no Winograd
// kernel the direct algorithm plans next, pinned as before.
memory::desc any_desc(const TensorLayout& l, const ConvDims& g, ConvPass pass,
                      const TensorLayout& partner, dnnl::algorithm alg);
memory::desc any_weights_desc(const TensorLayout& filter, const ConvDims& g);

// The forward primitive descriptor; the backward ones also need it (of their algorithm and the
// layouts their `pass` takes) as a hint. `bias` (a 1-D descriptor) and `attr` (post-ops) serve
// ConvBias.
dnnl::convolution_forward::primitive_desc conv_forward_pd(
        const HandleImpl& handle, const ConvDims& g, ConvPass pass, const TensorLayout& src,
        const TensorLayout& filter, const TensorLayout& dst,
        const std::optional<memory::desc>& bias = std::nullopt,
        const dnnl::primitive_attr& attr = user_scratchpad(),
        dnnl::algorithm alg = dnnl::algorithm::convolution_direct);

// The caller's src/dst as it is (strided) and its filter (reversed in the flipped mode; as an
// input, its reordered form is kept in the WeightCache while the filter's value stays the same).
Operand data_operand(const TensorLayout& l);
Operand weights_operand(const TensorLayout& filter, const ConvDims& g);

// Whether the bias is {1, OC, 1...}: one value per channel of `dst` (NCHW-ordered dims).
bool per_channel(const TensorLayout& bias, const TensorLayout& dst);

// ConvBias's z (a sum step) and nonlinearity (an eltwise step) as post-ops on the user
// scratchpad; ConvBias and ConvBiasBlocked name the same modes in their own param enums.
template <class NonlineMode>
dnnl::primitive_attr post_ops_attr(NonlineMode mode, bool has_z) {
    dnnl::post_ops ops;
    if (has_z)
        ops.append_sum(1.f);
    switch (mode) {
        case NonlineMode::IDENTITY:
            break;
        case NonlineMode::RELU:
            ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
            break;
        case NonlineMode::SIGMOID:
            ops.append_eltwise(1.f, dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
            break;
        case NonlineMode::H_SWISH:
            ops.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f);
            break;
    }
    dnnl::primitive_attr attr = user_scratchpad();
    attr.set_post_ops(ops);
    return attr;
}

}  // namespace neomeg::dnn::x86
