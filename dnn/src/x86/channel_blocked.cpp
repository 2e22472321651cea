// ChannelBlock and ChannelUnblock as oneDNN reorders between plain (strided) and blocked memory,
// PoolingBlocked as oneDNN's pooling on blocked memory, and the channel block the x86 handle
// prefers. Cases without a oneDNN tag (blocked_desc) go to naive.
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/blocked_desc.h"
#include "src/x86/conv_common.h"
#include "src/x86/max_pool_plan.h"

namespace neomeg::dnn::x86 {

std::optional<memory::desc> blocked_desc(const TensorLayout& blocked, size_t channels) {
    using tag = memory::format_tag;
    auto type = dnnl_type_of(blocked.dtype);
    const size_t block = blocked.ndim ? blocked[blocked.ndim - 1] : 0;
    if (!type || blocked.ndim < 4 || blocked.ndim > 6 || blocked.is_empty() ||
        channel_blocks(channels, block ? block : 1) != blocked[1])
        return std::nullopt;
    static constexpr tag kTags[3][3] = {{tag::nCw4c, tag::nCw8c, tag::nCw16c},
                                        {tag::nChw4c, tag::nChw8c, tag::nChw16c},
                                        {tag::nCdhw4c, tag::nCdhw8c, tag::nCdhw16c}};
    size_t b = block == 4 ? 0 : block == 8 ? 1 : block == 16 ? 2 : 3;
    if (b == 3)
        return std::nullopt;
    memory::dims dims = dims_of(TensorLayout(unblocked_shape(blocked, channels), blocked.dtype));
    return memory::desc(dims, *type, kTags[blocked.ndim - 4][b]);
}

Operand blocked_operand(const TensorLayout& blocked, size_t channels) {
    return Operand::of(blocked, false, [channels](const TensorLayout& l) {
        return l.is_contiguous() ? blocked_desc(l, channels) : std::nullopt;
    });
}

namespace {

std::optional<memory::desc> strided_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l), *dnnl_type_of(l.dtype));
}

// A plan of one reorder between the plain tensor and the blocked one.
std::unique_ptr<Plan> reorder_plan(const dnnl::engine& engine, const TensorLayout& plain,
                                   const TensorLayout& blocked, bool to_blocked) {
    if (!dnnl_type_of(plain.dtype) || plain.is_empty())
        return nullptr;
    auto blocked_md = blocked_desc(TensorLayout(blocked, blocked.dtype), plain[1]);
    if (!blocked_md)
        return nullptr;
    Operand plain_op = Operand::of(plain, false, strided_desc);
    Operand blocked_op = blocked_operand(blocked, plain[1]);
    const memory::desc& from = to_blocked ? plain_op.user_desc() : *blocked_md;
    const memory::desc& to = to_blocked ? *blocked_md : plain_op.user_desc();
    dnnl::reorder::primitive_desc rpd(engine, from, engine, to, user_scratchpad());
    auto plan = std::make_unique<PrimitivePlan>(engine, str_cat("reorder:", rpd.impl_info_str()));
    plan->add_step(dnnl::reorder(rpd), rpd);
    if (to_blocked) {
        plan->add(DNNL_ARG_FROM, std::move(plain_op), from, false);
        plan->add(DNNL_ARG_TO, std::move(blocked_op), to, true);
    } else {
        plan->add(DNNL_ARG_FROM, std::move(blocked_op), from, false);
        plan->add(DNNL_ARG_TO, std::move(plain_op), to, true);
    }
    plan->finalize();
    return plan;
}

class ChannelBlockImpl final : public DnnlKernel<ChannelBlock> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return reorder_plan(x86_handle().engine(), in[0], out[0], true);
    }
};

class ChannelUnblockImpl final : public DnnlKernel<ChannelUnblock> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return reorder_plan(x86_handle().engine(), out[0], in[0], false);
    }
};

class PoolingBlockedImpl final : public DnnlKernel<PoolingBlocked> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const TensorLayout &src = in[0], &dst = out[0];
        const size_t spatial = src.ndim - 3, channels = src[1] * src[src.ndim - 1];
        auto src_md = blocked_desc(TensorLayout(src, src.dtype), channels);
        auto dst_md = blocked_desc(TensorLayout(dst, dst.dtype), channels);
        if (!src_md || !dst_md || m_param.window.size() != spatial)
            return nullptr;
        // MAX on float32 and bfloat16 in our loop, which keeps naive's NaN rule (oneDNN's skips
        // NaNs).
        if (auto ours = max_pool_blocked_plan(m_param, src, dst))
            return ours;
        memory::dims kernel, stride, pad;
        for (size_t d = 0; d < spatial; ++d) {
            kernel.push_back(m_param.window[d]);
            stride.push_back(m_param.stride[d]);
            pad.push_back(m_param.padding[d]);
        }
        auto alg = dnnl::algorithm::pooling_max;
        if (m_param.mode == param::Pooling::Mode::AVERAGE)
            alg = dnnl::algorithm::pooling_avg_include_padding;
        else if (m_param.mode == param::Pooling::Mode::AVERAGE_COUNT_EXCLUDE_PADDING)
            alg = dnnl::algorithm::pooling_avg_exclude_padding;
        dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, *src_md, *dst_md,
                                         stride, kernel, pad, pad);
        const dnnl::engine& engine = x86_handle().engine();
        dnnl::pooling_forward::primitive_desc pd(desc, user_scratchpad(), engine);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::pooling_forward(pd), pd, engine,
                                                    pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, blocked_operand(src, channels), pd.src_desc(), false);
        plan->add(DNNL_ARG_DST, blocked_operand(dst, channels), pd.dst_desc(), true);
        plan->finalize();
        return plan;
    }
};

}  // namespace

// oneDNN's f32 convolutions run on 16-channel blocks where the CPU has AVX-512 and on 8-channel
// blocks with AVX2 (what format_tag::any picks for them); ONEDNN_MAX_CPU_ISA caps the answer.
size_t HandleImpl::preferred_channel_block() const {
    if (has_avx512_core())
        return 16;
    if (onednn_runs_isa(dnnl::cpu_isa::avx2))
        return 8;
    return 0;
}

NM_REGISTER_X86(ChannelBlock, ChannelBlockImpl);
NM_REGISTER_X86(ChannelUnblock, ChannelUnblockImpl);
NM_REGISTER_X86(PoolingBlocked, PoolingBlockedImpl);
}  // namespace neomeg::dnn::x86
