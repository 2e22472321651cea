// ConvBias through oneDNN's convolution with post-ops: act(conv(src, filter) + bias + z) in one
// primitive, every case the convolution kernels take (convolution.cpp: ranks, groups, dilation,
// both modes, float32, bfloat16, and float16 in float32 where oneDNN has no 16-bit kernel). A
// per-channel bias ({1, OC, 1...}, or {1, 1, 1...} with one channel) is the primitive's bias; the
// residual z is a sum post-op, which adds to what dst's buffer holds, so a first step reorders z
// into that buffer; the nonlinearity is an eltwise post-op (IDENTITY none, RELU relu, SIGMOID
// logistic, H_SWISH hardswish). A bias of another broadcast shape goes to naive, as do the cases
// the convolution kernels decline. The algorithm is chosen as in convolution.cpp (conv_algo.h).
// Quantized int8 calls run our exact integer GEMM instead (conv_bias_int8.h).
// A depthwise convolution (a group per input channel, a grayscale image's 1-channel first layer
// among them) on contiguous plain float32 tensors runs our own loops instead (depthwise_conv.h),
// then one sweep adds bias and z and applies the nonlinearity: as for ConvolutionForward, oneDNN
// has no fast kernel for these on plain memory. Below AVX-512, a pointwise convolution of small
// contiguous images (pixels a multiple of 16 below 128) runs as ConvolutionForward's batched
// matmul (conv_pointwise_matmul.h) followed by the same sweep.
#include <algorithm>
#include <cmath>

#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_algo.h"
#include "src/x86/conv_bias_int8.h"
#include "src/x86/conv_pointwise_matmul.h"
#include "src/x86/depthwise_conv.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using NonlineMode = param::ConvBias::NonlineMode;

// The bias as the primitive's {OC} vector.
Operand bias_operand(const TensorLayout& bias) {
    return Operand::of(bias, false, [](const TensorLayout& l) {
        return plain_desc({static_cast<memory::dim>(l[1])}, {l.stride[1]}, *dnnl_type_of(l.dtype));
    });
}

float nonlinearity(NonlineMode mode, float x) {
    switch (mode) {
        case NonlineMode::IDENTITY:
            return x;
        case NonlineMode::RELU:
            return std::max(x, 0.f);
        case NonlineMode::SIGMOID:
            return 1 / (1 + std::exp(-x));
        case NonlineMode::H_SWISH:
            return x * std::clamp(x + 3, 0.f, 6.f) / 6;
    }
    return x;
}

// A convolution plan without epilogue (the depthwise loops, the small-pointwise matmul) into dst,
// then per (image, channel) plane dst = act(dst + bias[channel] + z), rounding after each
// operation as the primitive's post-ops.
class ConvThenEpiloguePlan final : public Plan {
public:
    ConvThenEpiloguePlan(std::unique_ptr<Plan> conv, NonlineMode mode, size_t planes,
                         size_t channels, size_t plane)
        : m_conv(std::move(conv)),
          m_mode(mode),
          m_planes(planes),
          m_channels(channels),
          m_plane(plane) {}
    size_t workspace_in_bytes() const override { return m_conv->workspace_in_bytes(); }
    const char* name() const override { return m_conv->name(); }

    // The call's tensors: src, filter, bias, z (ndim 0: absent), dst.
    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        const TensorND conv[] = {t[0], t[1], t[4]};
        m_conv->run(conv, ws, stream);
        const auto* bias = t[2].layout.ndim ? static_cast<const float*>(t[2].raw_ptr()) : nullptr;
        const auto* z = t[3].layout.ndim ? static_cast<const float*>(t[3].raw_ptr()) : nullptr;
        auto* dst = static_cast<float*>(t[4].raw_ptr());
        parallel_ranges(m_planes, m_planes * m_plane, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t p = b; p < e; ++p) {
                const float bv = bias ? bias[p % m_channels] : 0.f;
                float* d = dst + p * m_plane;
                const float* zp = z ? z + p * m_plane : nullptr;
                // One loop per case, so that the common ones (bias, RELU) vectorise.
                if (m_mode == NonlineMode::RELU && !zp) {
                    for (size_t i = 0; i < m_plane; ++i)
                        d[i] = std::max(d[i] + bv, 0.f);
                } else if (m_mode == NonlineMode::RELU) {
                    for (size_t i = 0; i < m_plane; ++i)
                        d[i] = std::max(d[i] + bv + zp[i], 0.f);
                } else if (m_mode == NonlineMode::IDENTITY && !zp) {
                    for (size_t i = 0; i < m_plane; ++i)
                        d[i] += bv;
                } else {
                    for (size_t i = 0; i < m_plane; ++i)
                        d[i] = nonlinearity(m_mode, zp ? d[i] + bv + zp[i] : d[i] + bv);
                }
            }
        });
    }

private:
    std::unique_ptr<Plan> m_conv;
    NonlineMode m_mode;
    size_t m_planes, m_channels, m_plane;
};

// The depthwise loops' plan, or where `g` says so the small-pointwise matmul's, followed by the
// sweep, for contiguous float32 operands (the sweep's indexing), else null. The matmul runs below
// AVX-512 only, where it is oneDNN's sgemm: there it and the sweep beat the blocked 1x1
// convolution (bias and relu fused) with its reorders on pixel counts that are multiples of 16
// (docs/x86-backend-log.md, "ConvBias's small pointwise images as the sgemm matmul"), while the
// off-step counts from 64 (10x10) that ConvolutionForward also takes lost by the sweep's pass and
// stay on the convolution. Its bias as a binary post-op of the matmul (oneDNN's bias argument
// takes a vector along the pixels only) cost more than the sweep. AVX-512's brgemm matmul was
// not measured against the convolution with post-ops: ConvBias keeps its convolution there.
std::unique_ptr<Plan> conv_then_epilogue_plan(const HandleImpl& handle, const ConvDims& g,
                                              const param::ConvBias& p,
                                              std::span<const TensorLayout> in,
                                              const TensorLayout& dst) {
    const TensorLayout &src = in[0], &filter = in[1], &bias = in[2], &z = in[3];
    for (const TensorLayout* l : {&src, &filter, &bias, &z, &dst})
        if (l->ndim && (l->dtype != dtype::Float32 || !l->is_contiguous()))
            return nullptr;
    if (dst.ndim < 3 || dst.is_empty() || (z.ndim && !z.eq_shape(dst)))
        return nullptr;
    std::unique_ptr<Plan> conv = depthwise_forward_plan(ConvArgs::of(p), src, filter, dst);
    if (!conv && !has_avx512_core() && pointwise_matmul(g, src, dst) &&
        dst.total_nr_elems() / (dst[0] * dst[1]) % kPointwiseMatmulPixelStep == 0)
        conv = pointwise_matmul_plan(handle, ConvPass::forward, filter, src, dst);
    if (!conv)
        return nullptr;
    const size_t plane = dst.total_nr_elems() / (dst[0] * dst[1]);
    return std::make_unique<ConvThenEpiloguePlan>(std::move(conv), p.nonlineMode, dst[0] * dst[1],
                                                  dst[1], plane);
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
        if (src.dtype.is_quantized())
            return int8_conv_bias_plan(*this, in, dst);
        const bool has_bias = bias.ndim != 0, has_z = z.ndim != 0;
        auto g = conv_geometry(ConvArgs::of(m_param), src, filter, dst);
        if (!g || (has_z && z.is_empty()))
            return nullptr;
        if (has_bias && !per_channel(bias, dst))
            return nullptr;
        if (auto plan = conv_then_epilogue_plan(x86_handle(), *g, m_param, in, dst))
            return plan;
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
                    return conv_forward_pd(x86_handle(), *g, ConvPass::forward, src, filter, dst,
                                           any_bias, post_ops_attr(m_param.nonlineMode, has_z),
                                           alg);
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
