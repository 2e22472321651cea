// ConvolutionForward, ConvolutionBackwardData (also the transposed convolution) and
// ConvolutionBackwardFilter through oneDNN: 1-D, 2-D and 3-D (NCW, NCHW, NCDHW), any stride,
// padding, dilation and group, both modes, float32 and (where the CPU has a kernel) bfloat16 with
// float32 accumulation, by the algorithm conv_algo.h chooses (Winograd for the 3x3 stride-1 shapes
// where it wins, direct elsewhere; with fastrun the measured faster); bfloat16 1x1 filter
// gradients, and strided 1x1 input gradients as stride-1 ones on the subsampled grid, by oneDNN's
// gemm kernel (conv_pointwise_lowp.h); float32 1x1 filter gradients of large plain images one
// image at a time (conv_filter_per_image.h); float32 1x1 input gradients into more channels than
// diff has as the forward gemm convolution (conv_pointwise_backward_data.h); float32 1x1 forwards
// and input gradients of small images as one batched matmul (conv_pointwise_matmul.h); bfloat16
// channels-last convolutions with short output rows as im2col and one AMX matrix product
// (conv_im2col_lowp.h).
// The primitives choose their own layouts (format_tag::any: the blocked formats their fast kernels
// need), and the caller's strided tensors are reordered in and out through the workspace. The
// flipped-kernel CONVOLUTION mode is cross-correlation with the filter reversed in every spatial
// axis: the reversal rides on the filter's staging copy, which the blocked weight layout needs
// anyway. A filter whose storage and version stay the same is reordered once and then read from the
// WeightCache (weight_cache.h). What oneDNN has no kernel for (float16 in oneDNN 2.6, bfloat16
// below AVX-512) runs the float32 primitive between vectorised conversions (lowp_plan.h); empty
// tensors go to naive. Depthwise convolutions on plain float32 tensors run our own loops instead
// (depthwise_conv.h).
#include <deque>

#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_algo.h"
#include "src/x86/conv_common.h"
#include "src/x86/conv_filter_chunks.h"
#include "src/x86/conv_filter_per_image.h"
#include "src/x86/conv_im2col_lowp.h"
#include "src/x86/conv_pointwise_backward_data.h"
#include "src/x86/conv_pointwise_lowp.h"
#include "src/x86/conv_pointwise_matmul.h"
#include "src/x86/depthwise_conv.h"

namespace neomeg::dnn::x86 {
namespace {

class ConvolutionForwardImpl final : public DnnlKernel<ConvolutionForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &src = in[0], &filter = in[1], &dst = out[0];
        if (auto dw = depthwise_forward_plan(ConvArgs::of(m_param), src, filter, dst))
            return dw;
        auto g = conv_geometry(ConvArgs::of(m_param), src, filter, dst);
        if (!g)
            return nullptr;
        if (im2col_lowp_chosen(ConvPass::forward, *g, src, filter, dst))
            if (auto plan = im2col_lowp_plan(ConvPass::forward, x86_handle().engine(), *g, src,
                                             filter, dst))
                return plan;
        if (pointwise_matmul(*g, src, dst))
            if (auto plan =
                        pointwise_matmul_plan(x86_handle(), ConvPass::forward, filter, src, dst))
                return plan;
        const TensorLayout layouts[] = {src, filter, dst};
        auto pd = choose_conv_pd(x86_handle(), conv_case_key("fwd", *g, layouts),
                                 default_conv_algorithm(ConvPass::forward, *g, src, filter, dst),
                                 [&](dnnl::algorithm alg) {
                                     return conv_forward_pd(x86_handle(), *g, ConvPass::forward,
                                                            src, filter, dst, std::nullopt,
                                                            user_scratchpad(), alg);
                                 });
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_forward(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, data_operand(src), pd.src_desc(), false);
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, *g), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DST, data_operand(dst), pd.dst_desc(), true);
        plan->finalize();
        return plan;
    }
};

class ConvolutionBackwardDataImpl final : public DnnlKernel<ConvolutionBackwardData> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &filter = in[0], &diff = in[1], &grad = out[0];
        if (auto dw = depthwise_backward_data_plan(ConvArgs::of(m_param), filter, diff, grad))
            return dw;
        auto g = conv_geometry(ConvArgs::of(m_param), grad, filter, diff);
        if (!g)
            return nullptr;
        if (im2col_lowp_chosen(ConvPass::backward_data, *g, grad, filter, diff))
            if (auto plan = im2col_lowp_plan(ConvPass::backward_data, x86_handle().engine(), *g,
                                             grad, filter, diff))
                return plan;
        // A strided bfloat16 1x1 one: stride 1 by the gemm kernel into a zeroed grad's
        // subsampled view (conv_pointwise_lowp.h).
        if (auto sub = subsampled_grad(filter, diff, grad, *g))
            return subsampled_grad_plan(plan_for(sub->g, filter, diff, sub->view, true), sub->view);
        if (pointwise_matmul(*g, diff, grad))
            if (auto plan = pointwise_matmul_plan(x86_handle(), ConvPass::backward_data, filter,
                                                  diff, grad))
                return plan;
        if (pointwise_backward_data_as_forward(*g, filter, diff, grad))
            if (auto plan = pointwise_backward_data_plan(x86_handle(), *g, filter, diff, grad))
                return plan;
        return plan_for(*g, filter, diff, grad, false);
    }

    std::unique_ptr<Plan> plan_for(const ConvDims& g, const TensorLayout& filter,
                                   const TensorLayout& diff, const TensorLayout& grad,
                                   bool prefer_gemm) {
        // next_impl() (pointwise_bf16_gemm) initialises further implementations from the op
        // descriptor and the forward hint, which oneDNN's iterator holds by pointer: both live, at
        // fixed addresses, until the plan is made.
        std::deque<dnnl::convolution_forward::primitive_desc> hints;
        std::deque<dnnl::convolution_backward_data::desc> descs;
        auto make_pd = [&](dnnl::algorithm alg) {
            constexpr ConvPass pass = ConvPass::backward_data;
            const auto& hint =
                    hints.emplace_back(conv_forward_pd(x86_handle(), g, pass, grad, filter, diff,
                                                       std::nullopt, user_scratchpad(), alg));
            auto& desc = descs.emplace_back(
                    alg, any_desc(grad, g, pass, diff, alg), any_weights_desc(filter, g),
                    any_desc(diff, g, pass, grad, alg), g.stride, g.dilate, g.pad, g.pad);
            return dnnl::convolution_backward_data::primitive_desc(desc, user_scratchpad(),
                                                                   x86_handle().engine(), hint);
        };
        const TensorLayout layouts[] = {filter, diff, grad};
        auto pd = choose_conv_pd(
                x86_handle(), conv_case_key("bwd_data", g, layouts),
                default_conv_algorithm(ConvPass::backward_data, g, grad, filter, diff), make_pd);
        // bfloat16 has no Winograd kernel, so the gemm choice starts from the direct method's.
        if (prefer_gemm)
            if (auto gemm = pointwise_bf16_gemm(
                        filter, g, [&] { return make_pd(dnnl::algorithm::convolution_direct); }))
                pd = *gemm;
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_data(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, g), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, data_operand(diff), pd.diff_dst_desc(), false);
        plan->add(DNNL_ARG_DIFF_SRC, data_operand(grad), pd.diff_src_desc(), true);
        plan->finalize();
        return plan;
    }
};

// A 16-bit filter gradient of a convolution with one input channel (a grayscale model's first
// layer), which oneDNN 2.6's AMX kernel pads to a full tile of channels: the float32 kernel between
// conversions (lowp_in_float32) took 0.3x its time (LeNet's 1->6 5x5 filter at batch 64).
bool single_channel_lowp(const TensorLayout& src, const ConvDims& g) {
    return src.dtype != dtype::Float32 && g.group == 1 && src[1] == 1;
}

class ConvolutionBackwardFilterImpl final : public DnnlKernel<ConvolutionBackwardFilter> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (m_param.group != 1)
            return make_whole_plan(in, out);
        auto make = [this](auto i, auto o) { return make_whole_plan(i, o); };
        if (auto g = conv_geometry(ConvArgs::of(m_param), in[0], out[0], in[1]))
            if (pointwise_filter_per_image(*g, in, out))
                if (auto plan = per_image_filter_plan(in, out, make))
                    return plan;
        return split_filter_gradient(make_whole_plan(in, out), in, out, 1, make);
    }

    std::unique_ptr<Plan> make_whole_plan(std::span<const TensorLayout> in,
                                          std::span<const TensorLayout> out) {
        const TensorLayout &src = in[0], &diff = in[1], &grad = out[0];
        if (auto dw = depthwise_backward_filter_plan(ConvArgs::of(m_param), src, diff, grad))
            return dw;
        auto g = conv_geometry(ConvArgs::of(m_param), src, grad, diff);
        if (!g || single_channel_lowp(src, *g))
            return nullptr;
        if (im2col_lowp_chosen(ConvPass::backward_filter, *g, src, grad, diff))
            if (auto plan = im2col_lowp_plan(ConvPass::backward_filter, x86_handle().engine(), *g,
                                             src, grad, diff))
                return plan;
        // next_impl() (pointwise_bf16_gemm) initialises further implementations from the op
        // descriptor and the forward hint, which oneDNN's iterator holds by pointer: both live, at
        // fixed addresses, until the plan is made.
        std::deque<dnnl::convolution_forward::primitive_desc> hints;
        std::deque<dnnl::convolution_backward_weights::desc> descs;
        auto make_pd = [&](dnnl::algorithm alg) {
            constexpr ConvPass pass = ConvPass::backward_filter;
            const auto& hint = hints.emplace_back(conv_forward_pd(
                    x86_handle(), *g, pass, src, grad, diff, std::nullopt, user_scratchpad(), alg));
            auto& desc = descs.emplace_back(
                    alg, any_desc(src, *g, pass, diff, alg), any_weights_desc(grad, *g),
                    any_desc(diff, *g, pass, src, alg), g->stride, g->dilate, g->pad, g->pad);
            return dnnl::convolution_backward_weights::primitive_desc(desc, user_scratchpad(),
                                                                      x86_handle().engine(), hint);
        };
        const TensorLayout layouts[] = {src, diff, grad};
        auto pd = choose_conv_pd(
                x86_handle(), conv_case_key("bwd_filter", *g, layouts),
                default_conv_algorithm(ConvPass::backward_filter, *g, src, grad, diff), make_pd);
        if (auto gemm = pointwise_bf16_gemm(
                    grad, *g, [&] { return make_pd(dnnl::algorithm::convolution_direct); }))
            pd = *gemm;
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_weights(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, data_operand(src), pd.src_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, data_operand(diff), pd.diff_dst_desc(), false);
        // In the flipped mode the gradient comes out for the reversed filter and is written back
        // reversed.
        plan->add(DNNL_ARG_DIFF_WEIGHTS, weights_operand(grad, *g), pd.diff_weights_desc(), true);
        plan->finalize();
        return aligned_if_winograd(std::move(plan));
    }
};

}  // namespace
NM_REGISTER_X86(ConvolutionForward, ConvolutionForwardImpl);
NM_REGISTER_X86(ConvolutionBackwardData, ConvolutionBackwardDataImpl);
NM_REGISTER_X86(ConvolutionBackwardFilter, ConvolutionBackwardFilterImpl);
}  // namespace neomeg::dnn::x86
