// ConvBias through oneDNN's convolution with post-ops: act(conv(src, filter) + bias + z) in one
// primitive, every case the convolution kernels take (convolution.cpp: ranks, groups, dilation,
// both modes, float32, bfloat16, and float16 in float32 where oneDNN has no 16-bit kernel). A
// per-channel bias ({1, OC, 1...}, or {1, 1, 1...} with one channel) is the primitive's bias; the
// residual z is a sum post-op, which adds to what dst's buffer holds, so a first step reorders z
// into that buffer; the nonlinearity is an eltwise post-op (IDENTITY none, RELU relu, SIGMOID
// logistic, H_SWISH hardswish). A bias of another broadcast shape goes to naive, as do the cases
// the convolution kernels decline. The algorithm is chosen as in convolution.cpp (conv_algo.h).
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_algo.h"

namespace neomeg::dnn::x86 {
namespace {

using NonlineMode = param::ConvBias::NonlineMode;

// The bias as the primitive's {OC} vector.
Operand bias_operand(const TensorLayout& bias) {
    return Operand::of(bias, false, [](const TensorLayout& l) {
        return plain_desc({static_cast<memory::dim>(l[1])}, {l.stride[1]}, *dnnl_type_of(l.dtype));
    });
}

class ConvBiasImpl final : public DnnlKernel<ConvBias> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &src = in[0], &filter = in[1], &bias = in[2], &z = in[3], &dst = out[0];
        const bool has_bias = bias.ndim != 0, has_z = z.ndim != 0;
        auto g = conv_geometry(ConvArgs::of(m_param), src, filter, dst);
        if (!g || (has_z && z.is_empty()))
            return nullptr;
        if (has_bias && !per_channel(bias, dst))
            return nullptr;
        const dnnl::engine& engine = x86_handle().engine();
        std::optional<memory::desc> any_bias;
        if (has_bias)
            any_bias = memory::desc({static_cast<memory::dim>(dst[1])}, *dnnl_type_of(bias.dtype),
                                    memory::format_tag::any);
        const TensorLayout layouts[] = {src, filter, bias, z, dst};
        auto pd = choose_conv_pd(
                x86_handle(),
                conv_case_key(str_cat("conv_bias nonline", static_cast<int>(m_param.nonlineMode)),
                              *g, layouts),
                default_conv_algorithm(ConvPass::forward, *g, src, filter, dst),
                [&](dnnl::algorithm alg) {
                    return conv_forward_pd(x86_handle(), *g, src, filter, dst, any_bias,
                                           post_ops_attr(m_param.nonlineMode, has_z), alg);
                });
        auto plan = std::make_unique<PrimitivePlan>(engine, pd.impl_info_str());
        std::optional<Operand> z_op;
        if (has_z) {
            // Step 0 copies z into dst's buffer, in the primitive's dst layout.
            z_op = data_operand(z);
            dnnl::reorder::primitive_desc rpd(engine, z_op->user_desc(), engine, pd.dst_desc(),
                                              user_scratchpad());
            plan->add_step(dnnl::reorder(rpd), rpd);
            memory::desc z_md = z_op->user_desc();
            plan->add_at(3, DNNL_ARG_FROM, std::move(*z_op), z_md, false);
        }
        plan->add_step(dnnl::convolution_forward(pd), pd);
        plan->add(DNNL_ARG_SRC, data_operand(src), pd.src_desc(), false);
        plan->add(DNNL_ARG_WEIGHTS, weights_operand(filter, *g), pd.weights_desc(), false);
        if (has_bias)
            plan->add(DNNL_ARG_BIAS, bias_operand(bias), pd.bias_desc(), false);
        else
            plan->skip_tensor();
        plan->skip_tensor();  // z, read by step 0
        plan->add(DNNL_ARG_DST, data_operand(dst), pd.dst_desc(), true);
        if (has_z)
            plan->use_operand(0, DNNL_ARG_TO, plan->num_operands() - 1);
        plan->finalize();
        return plan;
    }
};

}  // namespace
NM_REGISTER_X86(ConvBias, ConvBiasImpl);
}  // namespace neomeg::dnn::x86
