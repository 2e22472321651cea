// PoolingForward and PoolingBackward through oneDNN's pooling, float32 and (where the CPU has a
// kernel: AVX-512) bfloat16, 1-D to 3-D (NCW, NCHW, NCDHW) in every mode: MAX (the first maximum of
// a window, padding never counts), AVERAGE (pooling_avg_include_padding) and
// AVERAGE_COUNT_EXCLUDE_PADDING (pooling_avg_exclude_padding). The operator's backward gets src,
// not the forward's indices, so MAX's backward reruns the forward for them. Other dtypes (float16:
// oneDNN 2.6 has no CPU kernel) and empty tensors go to naive.
#include "src/x86/kernel.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct Window {
    memory::dims kernel, stride, pad;
    algorithm alg = algorithm::pooling_max;
};

// The window in oneDNN's terms, or nullopt where the kernel declines. Padding is symmetric; the
// shape rule floors, which oneDNN accepts with the same padding on the right.
std::optional<Window> window_of(const param::Pooling& p, std::span<const TensorLayout> layouts) {
    for (const TensorLayout& l : layouts)
        if (l.dtype != layouts[0].dtype || !dnnl_type_of(l.dtype) || l.is_empty() || l.ndim < 3 ||
            l.ndim > 5)
            return std::nullopt;
    size_t spatial = layouts[0].ndim - 2;
    if (p.window.size() != spatial || p.stride.size() != spatial || p.padding.size() != spatial)
        return std::nullopt;
    Window w;
    for (size_t d = 0; d < spatial; ++d) {
        w.kernel.push_back(p.window[d]);
        w.stride.push_back(p.stride[d]);
        w.pad.push_back(p.padding[d]);
    }
    switch (p.mode) {
        case param::Pooling::Mode::MAX:
            w.alg = algorithm::pooling_max;
            break;
        case param::Pooling::Mode::AVERAGE:
            w.alg = algorithm::pooling_avg_include_padding;
            break;
        case param::Pooling::Mode::AVERAGE_COUNT_EXCLUDE_PADDING:
            w.alg = algorithm::pooling_avg_exclude_padding;
            break;
    }
    return w;
}

std::optional<memory::desc> strided_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l), *dnnl_type_of(l.dtype));
}

Operand operand(const TensorLayout& l, bool stage) {
    return Operand::of(l, stage, strided_desc);
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::pooling_forward::primitive_desc forward_pd(const HandleImpl& handle, const Window& w,
                                                 prop_kind kind, const memory::desc& src,
                                                 const memory::desc& dst) {
    dnnl::pooling_forward::desc desc(kind, w.alg, src, dst, w.stride, w.kernel, w.pad, w.pad);
    return {desc, user_scratchpad(), handle.engine()};
}

class PoolingForwardImpl final : public DnnlKernel<PoolingForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        auto w = window_of(m_param, std::array{in[0], out[0]});
        if (!w)
            return nullptr;
        // Strided operands as they are first; staged dense where that gets only the reference
        // implementation.
        for (bool stage : {false, true}) {
            Operand src = operand(in[0], stage), dst = operand(out[0], stage);
            auto pd = forward_pd(x86_handle(), *w, prop_kind::forward_inference, src.user_desc(),
                                 dst.user_desc());
            std::string_view impl = pd.impl_info_str();
            if (!stage && is_reference_impl(impl))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(dnnl::pooling_forward(pd), pd,
                                                        x86_handle().engine(), impl);
            plan->add(DNNL_ARG_SRC, std::move(src), pd.src_desc(), false);
            plan->add(DNNL_ARG_DST, std::move(dst), pd.dst_desc(), true);
            plan->finalize();
            return plan;
        }
        return nullptr;
    }
};

// Inputs src, dst (unread: MAX recomputes its maxima from src), diff; output grad.
class PoolingBackwardImpl final : public DnnlKernel<PoolingBackward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        auto w = window_of(m_param, std::array{in[0], in[2], out[0]});
        if (!w)
            return nullptr;
        const dnnl::engine& engine = x86_handle().engine();
        for (bool stage : {false, true}) {
            Operand src = operand(in[0], stage), diff = operand(in[2], stage),
                    grad = operand(out[0], stage);
            // The forward that MAX reruns, and the hint the backward descriptor needs; its dst
            // is a dense buffer of diff's shape.
            memory::desc dense_dst(dims_of(in[2]), *dnnl_type_of(in[2].dtype),
                                   memory::format_tag::any);
            dnnl::pooling_forward::primitive_desc fwd;
            dnnl::pooling_backward::primitive_desc pd;
            try {
                fwd = forward_pd(x86_handle(), *w, prop_kind::forward_training, src.user_desc(),
                                 dense_dst);
                dnnl::pooling_backward::desc desc(w->alg, grad.user_desc(), diff.user_desc(),
                                                  w->stride, w->kernel, w->pad, w->pad);
                pd = {desc, user_scratchpad(), engine, fwd};
            } catch (const dnnl::error&) {
                // No implementation takes these strides (MAX's backward with a strided src):
                // staged dense, they run.
                if (stage)
                    throw;
                continue;
            }
            std::string_view impl = pd.impl_info_str();
            if (!stage && is_reference_impl(impl))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(engine, impl);
            size_t indices = 0;
            if (w->alg == algorithm::pooling_max) {
                plan->add_step(dnnl::pooling_forward(fwd), fwd);
                plan->add(DNNL_ARG_SRC, std::move(src), fwd.src_desc(), false);
                plan->add_buffer(DNNL_ARG_DST, fwd.dst_desc());
                indices = plan->add_buffer(DNNL_ARG_WORKSPACE, fwd.workspace_desc());
            } else {
                plan->skip_tensor();
            }
            plan->add_step(dnnl::pooling_backward(pd), pd);
            plan->skip_tensor();
            plan->add(DNNL_ARG_DIFF_DST, std::move(diff), pd.diff_dst_desc(), false);
            plan->add(DNNL_ARG_DIFF_SRC, std::move(grad), pd.diff_src_desc(), true);
            if (w->alg == algorithm::pooling_max)
                plan->use(DNNL_ARG_WORKSPACE, indices);
            plan->finalize();
            return plan;
        }
        return nullptr;
    }
};

}  // namespace
NM_REGISTER_X86(PoolingForward, PoolingForwardImpl);
NM_REGISTER_X86(PoolingBackward, PoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
