// SoftmaxForward/Backward and LogSoftmaxBackward through oneDNN's softmax (v2: separate src and
// dst layouts; softmax_accurate subtracts the maximum as naive does), float32, any rank, any axis.
// Other dtypes and empty tensors go to naive. LogSoftmaxForward has its own kernel
// (log_softmax.cpp): oneDNN 2.6's vectorised log is off by about 2e-6 relative
// (log_softmax([0, 0]) = -0.69314575 instead of -0.69314718, what MegEngine, PyTorch and naive
// give), visible in every printed loss.
#include "src/x86/kernel.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

std::optional<memory::desc> strided_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l));
}

// The axis oneDNN counts (non-negative), or -1 where the kernel declines.
int axis_of(int32_t axis, std::span<const TensorLayout> layouts) {
    for (const TensorLayout& l : layouts)
        if (l.dtype != dtype::Float32 || l.is_empty() || l.ndim == 0)
            return -1;
    auto n = static_cast<int32_t>(layouts[0].ndim);
    if (axis < -n || axis >= n)
        return -1;
    return axis < 0 ? axis + n : axis;
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::softmax_v2_forward::primitive_desc forward_pd(const dnnl::engine& engine, algorithm alg,
                                                    prop_kind kind, const memory::desc& src,
                                                    const memory::desc& dst, int axis) {
    dnnl::softmax_v2_forward::desc desc(kind, alg, src, dst, axis);
    return {desc, user_scratchpad(), engine};
}

template <class Op, algorithm kAlg>
class ForwardImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        int axis = axis_of(this->m_param.axis, std::array{in[0], out[0]});
        if (axis < 0)
            return nullptr;
        const dnnl::engine& engine = this->x86_handle().engine();
        for (bool stage : {false, true}) {
            Operand src = Operand::of(in[0], stage, strided_desc);
            Operand dst = Operand::of(out[0], stage, strided_desc);
            auto pd = forward_pd(engine, kAlg, prop_kind::forward_inference, src.user_desc(),
                                 dst.user_desc(), axis);
            std::string_view impl = pd.impl_info_str();
            if (!stage && is_reference_impl(impl))
                continue;
            auto plan =
                    std::make_unique<PrimitivePlan>(dnnl::softmax_v2_forward(pd), pd, engine, impl);
            plan->add(DNNL_ARG_SRC, std::move(src), pd.src_desc(), false);
            plan->add(DNNL_ARG_DST, std::move(dst), pd.dst_desc(), true);
            plan->finalize();
            return plan;
        }
        return nullptr;
    }
};

// Inputs dst (the forward's output), diff; output grad.
template <class Op, algorithm kAlg>
class BackwardImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        int axis = axis_of(this->m_param.axis, std::array{in[0], in[1], out[0]});
        if (axis < 0)
            return nullptr;
        const dnnl::engine& engine = this->x86_handle().engine();
        for (bool stage : {false, true}) {
            Operand dst = Operand::of(in[0], stage, strided_desc);
            Operand diff = Operand::of(in[1], stage, strided_desc);
            Operand grad = Operand::of(out[0], stage, strided_desc);
            auto hint = forward_pd(engine, kAlg, prop_kind::forward_training, grad.user_desc(),
                                   dst.user_desc(), axis);
            dnnl::softmax_v2_backward::desc desc(kAlg, grad.user_desc(), diff.user_desc(),
                                                 dst.user_desc(), axis);
            dnnl::softmax_v2_backward::primitive_desc pd(desc, user_scratchpad(), engine, hint);
            std::string_view impl = pd.impl_info_str();
            if (!stage && is_reference_impl(impl))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(dnnl::softmax_v2_backward(pd), pd, engine,
                                                        impl);
            plan->add(DNNL_ARG_DST, std::move(dst), pd.dst_desc(), false);
            plan->add(DNNL_ARG_DIFF_DST, std::move(diff), pd.diff_dst_desc(), false);
            plan->add(DNNL_ARG_DIFF_SRC, std::move(grad), pd.diff_src_desc(), true);
            plan->finalize();
            return plan;
        }
        return nullptr;
    }
};

using SoftmaxForwardImpl = ForwardImpl<SoftmaxForward, algorithm::softmax_accurate>;
using SoftmaxBackwardImpl = BackwardImpl<SoftmaxBackward, algorithm::softmax_accurate>;
using LogSoftmaxBackwardImpl = BackwardImpl<LogSoftmaxBackward, algorithm::softmax_log>;

}  // namespace
NM_REGISTER_X86(SoftmaxForward, SoftmaxForwardImpl);
NM_REGISTER_X86(SoftmaxBackward, SoftmaxBackwardImpl);
NM_REGISTER_X86(LogSoftmaxBackward, LogSoftmaxBackwardImpl);
}  // namespace neomeg::dnn::x86
