// ConvolutionBackwardDataBlocked and ConvolutionBackwardFilterBlocked through oneDNN's backward
// convolutions with diff, src and the input gradient described in their blocked formats
// (blocked_desc.h), so that the primitive reads and writes them with no reorder; where the
// implementation oneDNN picks for those formats is its reference, the primitive chooses its own
// layouts and the operands reorder (as ConvBiasBlocked does). The filter and its gradient are
// plain, reordered as in convolution.cpp. The algorithm is conv_algo.h's choice (Winograd for the
// 3x3 stride-1 shapes where it wins, direct elsewhere; with fastrun the measured faster). A
// bfloat16 1x1 filter gradient reorders src and diff to plain for oneDNN's gemm kernel instead
// (conv_pointwise_lowp.h). A Winograd filter gradient whose scratchpad is over the budget runs in
// slices of its output channels (conv_filter_chunks.h).
#include <deque>

#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/blocked_desc.h"
#include "src/x86/conv_algo.h"
#include "src/x86/conv_common.h"
#include "src/x86/conv_filter_chunks.h"
#include "src/x86/conv_pointwise_lowp.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::algorithm;

// The forward primitive of `alg` on (src, dst) descriptors: the backward ones' hint.
dnnl::convolution_forward::primitive_desc forward_hint(const dnnl::engine& engine, algorithm alg,
                                                       const ConvDims& g, const memory::desc& src,
                                                       const memory::desc& weights,
                                                       const memory::desc& dst) {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, alg, src, weights, dst,
                                         g.stride, g.dilate, g.pad, g.pad);
    return {desc, user_scratchpad(), engine};
}

// What both backward convolutions derive alike from a blocked image (src, or the input gradient)
// of `ic` channels and a blocked diff of `oc`: their plain layouts, the geometry with the plain
// filter, and their blocked descriptors; nullopt where oneDNN cannot take them.
struct BlockedOperands {
    TensorLayout plain_image, plain_diff;
    ConvDims g;
    memory::desc image_md, diff_md;
};

std::optional<BlockedOperands> blocked_operands(const ConvArgs& args, const TensorLayout& image,
                                                size_t ic, const TensorLayout& filter,
                                                const TensorLayout& diff, size_t oc) {
    const TensorLayout plain_image(unblocked_shape(image, ic), image.dtype);
    const TensorLayout plain_diff(unblocked_shape(diff, oc), diff.dtype);
    auto g = conv_geometry(args, plain_image, filter, plain_diff);
    if (!g)
        return std::nullopt;
    auto image_md = blocked_desc(TensorLayout(image, image.dtype), ic);
    auto diff_md = blocked_desc(TensorLayout(diff, diff.dtype), oc);
    if (!image_md || !diff_md)
        return std::nullopt;
    return BlockedOperands{plain_image, plain_diff, *g, *image_md, *diff_md};
}

// make_pd(image_desc, diff_desc) on the blocked descriptors, or, where oneDNN picks its reference
// implementation for those, on descriptors of its own choosing.
template <class MakePd>
auto blocked_or_any_pd(const BlockedOperands& o, MakePd&& make_pd) {
    auto pd = make_pd(o.image_md, o.diff_md);
    if (is_reference_impl(pd.impl_info_str()))
        pd = make_pd(any_desc(o.plain_image), any_desc(o.plain_diff));
    return pd;
}

class ConvolutionBackwardDataBlockedImpl final : public DnnlKernel<ConvolutionBackwardDataBlocked> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &filter = in[0], &diff = in[1], &grad = out[0];
        const size_t oc = filter[0], ic = filter[1] * m_param.group;
        auto ops = blocked_operands(ConvArgs::of(m_param), grad, ic, filter, diff, oc);
        if (!ops)
            return nullptr;
        const ConvDims& g = ops->g;
        const dnnl::engine& engine = x86_handle().engine();
        memory::desc w_md = any_weights_desc(filter, g);
        auto make_pd = [&](algorithm alg) {
            return blocked_or_any_pd(
                    *ops, [&](const memory::desc& grad_d, const memory::desc& diff_d) {
                        dnnl::convolution_backward_data::desc desc(
                                alg, grad_d, w_md, diff_d, g.stride, g.dilate, g.pad, g.pad);
                        return dnnl::convolution_backward_data::primitive_desc(
                                desc, user_scratchpad(), engine,
                                forward_hint(engine, alg, g, grad_d, w_md, diff_d));
                    });
        };
        const TensorLayout layouts[] = {filter, diff, grad};
        auto pd = choose_conv_pd(x86_handle(), conv_case_key("bwd_data_blocked", g, layouts),
                                 default_conv_algorithm(ConvPass::backward_data, g,
                                                        ops->plain_image, filter, ops->plain_diff),
                                 make_pd);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_data(pd), pd, engine,
                                                    pd.impl_info_str());
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, g), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, blocked_operand(diff, oc), pd.diff_dst_desc(), false);
        plan->add(DNNL_ARG_DIFF_SRC, blocked_operand(grad, ic), pd.diff_src_desc(), true);
        plan->finalize();
        return plan;
    }
};

class ConvolutionBackwardFilterBlockedImpl final
    : public DnnlKernel<ConvolutionBackwardFilterBlocked> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (m_param.group != 1)
            return make_whole_plan(in, out);
        // A blocked diff's axis 1 counts channel blocks of its last axis's size.
        return split_filter_gradient(make_whole_plan(in, out), in, out, in[1][in[1].ndim - 1],
                                     [this](auto i, auto o) { return make_whole_plan(i, o); });
    }

    std::unique_ptr<Plan> make_whole_plan(std::span<const TensorLayout> in,
                                          std::span<const TensorLayout> out) {
        const TensorLayout &src = in[0], &diff = in[1], &grad = out[0];
        const size_t oc = grad[0], ic = grad[1] * m_param.group;
        auto ops = blocked_operands(ConvArgs::of(m_param), src, ic, grad, diff, oc);
        if (!ops)
            return nullptr;
        const ConvDims& g = ops->g;
        const dnnl::engine& engine = x86_handle().engine();
        memory::desc w_md = any_weights_desc(grad, g);
        // next_impl() (pointwise_bf16_gemm) initialises further implementations from the op
        // descriptor and the forward hint, which oneDNN's iterator holds by pointer: both live, at
        // fixed addresses, until the plan is made.
        std::deque<dnnl::convolution_forward::primitive_desc> hints;
        std::deque<dnnl::convolution_backward_weights::desc> descs;
        auto pd_for = [&](algorithm alg, const memory::desc& src_d, const memory::desc& diff_d) {
            auto& desc =
                    descs.emplace_back(alg, src_d, w_md, diff_d, g.stride, g.dilate, g.pad, g.pad);
            return dnnl::convolution_backward_weights::primitive_desc(
                    desc, user_scratchpad(), engine,
                    hints.emplace_back(forward_hint(engine, alg, g, src_d, w_md, diff_d)));
        };
        auto make_pd = [&](algorithm alg) {
            return blocked_or_any_pd(*ops,
                                     [&](const memory::desc& src_d, const memory::desc& diff_d) {
                                         return pd_for(alg, src_d, diff_d);
                                     });
        };
        const TensorLayout layouts[] = {src, diff, grad};
        auto pd = choose_conv_pd(x86_handle(), conv_case_key("bwd_filter_blocked", g, layouts),
                                 default_conv_algorithm(ConvPass::backward_filter, g,
                                                        ops->plain_image, grad, ops->plain_diff),
                                 make_pd);
        // A bfloat16 1x1 filter gradient is faster by the gemm kernel, on plain src and diff
        // reordered from the blocked ones, than by the AMX kernel on blocked ones
        // (conv_pointwise_lowp.h); bfloat16 has no Winograd kernel to choose instead.
        if (auto gemm = pointwise_bf16_gemm(grad, g, [&] {
                return pd_for(algorithm::convolution_direct, any_desc(ops->plain_image),
                              any_desc(ops->plain_diff));
            }))
            pd = *gemm;
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_weights(pd), pd,
                                                    engine, pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, blocked_operand(src, ic), pd.src_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, blocked_operand(diff, oc), pd.diff_dst_desc(), false);
        // In the flipped mode the gradient comes out for the reversed filter and is written back
        // reversed.
        plan->add(DNNL_ARG_DIFF_WEIGHTS, weights_operand(grad, g), pd.diff_weights_desc(), true);
        plan->finalize();
        return aligned_if_winograd(std::move(plan));
    }
};

}  // namespace
NM_REGISTER_X86(ConvolutionBackwardDataBlocked, ConvolutionBackwardDataBlockedImpl);
NM_REGISTER_X86(ConvolutionBackwardFilterBlocked, ConvolutionBackwardFilterBlockedImpl);
}  // namespace neomeg::dnn::x86
