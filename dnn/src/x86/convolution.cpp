// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter through oneDNN:
// float32, 2-D NCHW, CROSS_CORRELATION mode, any stride, padding, dilation and group. The
// primitives choose their own layouts (format_tag::any: the blocked formats their fast kernels
// need), and the caller's strided NCHW tensors are reordered in and out through the workspace.
// The flipped-kernel CONVOLUTION mode, 1-D and 3-D convolutions, other dtypes and empty tensors
// go to naive.
#include "src/x86/kernel.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using Tag = memory::format_tag;

// A convolution's geometry in oneDNN's terms; oneDNN counts dilation as the gap between taps
// (ours minus one). Padding is symmetric, as in the param; oneDNN's shape rule floors like ours,
// so an input size that a strided convolution partly skips still matches.
struct Geometry {
    memory::dims stride, dilate, pad;
    uint32_t group = 1;
};

// Whether the kernel takes src/filter/dst (in a backward op, the tensors in those roles); empty
// tensors and everything but float32 2-D cross-correlation is naive's.
bool takes(const param::Convolution& p, const TensorLayout& src, const TensorLayout& filter,
           const TensorLayout& dst) {
    for (const TensorLayout* l : {&src, &filter, &dst})
        if (l->ndim != 4 || l->dtype != dtype::Float32 || l->is_empty())
            return false;
    return p.mode == param::Convolution::Mode::CROSS_CORRELATION;
}

Geometry geometry_of(const param::Convolution& p) {
    Geometry g;
    for (size_t d = 0; d < 2; ++d) {
        g.stride.push_back(p.stride[d]);
        g.dilate.push_back(p.dilation[d] - 1);
        g.pad.push_back(p.padding[d]);
    }
    g.group = p.group;
    return g;
}

// The filter (OC, IC/group, KH, KW) as oneDNN's grouped weights (group, OC/group, IC/group, KH,
// KW): the same memory, its first axis split.
memory::dims weights_dims(const TensorLayout& l, uint32_t group) {
    memory::dims d = dims_of(l);
    if (group == 1)
        return d;
    d[0] /= group;
    d.insert(d.begin(), group);
    return d;
}

std::optional<memory::desc> weights_desc(const TensorLayout& l, uint32_t group) {
    memory::dims s = strides_of(l);
    if (group > 1)
        s.insert(s.begin(), s[0] * static_cast<memory::dim>(l[0] / group));
    return plain_desc(weights_dims(l, group), s);
}

std::optional<memory::desc> nchw_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l));
}

memory::desc any_desc(memory::dims dims) {
    return memory::desc(dims, memory::data_type::f32, Tag::any);
}

Operand data_operand(const TensorLayout& l) {
    return Operand::of(l, false, nchw_desc);
}

Operand weights_operand(const TensorLayout& l, uint32_t group) {
    return Operand::of(l, false, [group](const TensorLayout& x) { return weights_desc(x, group); });
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

// The forward primitive descriptor; the backward ones also need it as a hint for their layouts.
dnnl::convolution_forward::primitive_desc forward_pd(const HandleImpl& handle, const Geometry& g,
                                                     const TensorLayout& src,
                                                     const TensorLayout& filter,
                                                     const TensorLayout& dst) {
    dnnl::convolution_forward::desc desc(prop_kind::forward_training, algorithm::convolution_direct,
                                         any_desc(dims_of(src)),
                                         any_desc(weights_dims(filter, g.group)),
                                         any_desc(dims_of(dst)), g.stride, g.dilate, g.pad, g.pad);
    return {desc, user_scratchpad(), handle.engine()};
}

class ConvolutionForwardImpl final : public DnnlKernel<ConvolutionForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &src = in[0], &filter = in[1], &dst = out[0];
        if (!takes(m_param, src, filter, dst))
            return nullptr;
        Geometry g = geometry_of(m_param);
        auto pd = forward_pd(x86_handle(), g, src, filter, dst);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_forward(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, data_operand(src), pd.src_desc(), false);
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, g.group), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DST, data_operand(dst), pd.dst_desc(), true);
        plan->finalize();
        return plan;
    }
};

class ConvolutionBackwardDataImpl final : public DnnlKernel<ConvolutionBackwardData> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &filter = in[0], &diff = in[1], &grad = out[0];
        if (!takes(m_param, grad, filter, diff))
            return nullptr;
        Geometry g = geometry_of(m_param);
        auto hint = forward_pd(x86_handle(), g, grad, filter, diff);
        dnnl::convolution_backward_data::desc desc(
                algorithm::convolution_direct, any_desc(dims_of(grad)),
                any_desc(weights_dims(filter, g.group)), any_desc(dims_of(diff)), g.stride,
                g.dilate, g.pad, g.pad);
        dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(),
                                                           x86_handle().engine(), hint);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_data(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, g.group), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, data_operand(diff), pd.diff_dst_desc(), false);
        plan->add(DNNL_ARG_DIFF_SRC, data_operand(grad), pd.diff_src_desc(), true);
        plan->finalize();
        return plan;
    }
};

class ConvolutionBackwardFilterImpl final : public DnnlKernel<ConvolutionBackwardFilter> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &src = in[0], &diff = in[1], &grad = out[0];
        if (!takes(m_param, src, grad, diff))
            return nullptr;
        Geometry g = geometry_of(m_param);
        auto hint = forward_pd(x86_handle(), g, src, grad, diff);
        dnnl::convolution_backward_weights::desc desc(
                algorithm::convolution_direct, any_desc(dims_of(src)),
                any_desc(weights_dims(grad, g.group)), any_desc(dims_of(diff)), g.stride, g.dilate,
                g.pad, g.pad);
        dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(),
                                                              x86_handle().engine(), hint);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_backward_weights(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, data_operand(src), pd.src_desc(), false);
        plan->add(DNNL_ARG_DIFF_DST, data_operand(diff), pd.diff_dst_desc(), false);
        plan->add(DNNL_ARG_DIFF_WEIGHTS, weights_operand(grad, g.group), pd.diff_weights_desc(),
                  true);
        plan->finalize();
        return plan;
    }
};

}  // namespace
NM_REGISTER_X86(ConvolutionForward, ConvolutionForwardImpl);
NM_REGISTER_X86(ConvolutionBackwardData, ConvolutionBackwardDataImpl);
NM_REGISTER_X86(ConvolutionBackwardFilter, ConvolutionBackwardFilterImpl);
}  // namespace neomeg::dnn::x86
