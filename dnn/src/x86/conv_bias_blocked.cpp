// ConvBiasBlocked through oneDNN's convolution on blocked memory: dst (and z, and a blocked src)
// are described to oneDNN in their blocked format (blocked_desc.h), so the primitive reads and
// writes them with no reorder; a plain src is reordered into the layout the primitive chooses, as
// ConvBias does. Bias, residual and nonlinearity are fused as in ConvBias (conv_bias.cpp).
//
// The filter is reordered into the primitive's weights layout. With filter_is_const (the graph's
// layout pass sets it for constant filters) that happens into a buffer the plan owns, on the first
// call and again only when the filter's address changes. Otherwise the values at an address may
// change between calls (optimisers update in place): a filter with a storage identity goes
// through the WeightCache (weight_cache.h), keyed by its storage and version as the other
// convolutions' filters are, so an eager evaluation loop reorders it once; one without is
// reordered on every call.
//
// The algorithm is conv_algo.h's choice (Winograd for the 3x3 stride-1 shapes where it wins,
// direct elsewhere; with fastrun the measured faster). oneDNN's Winograd for inference wants the
// filter pre-transformed into its own weights format, four times the filter's size: worth it for a
// constant filter, converted once, but not for one converted on every call, whose Winograd plan is
// the training one (the filter in a plain blocked format, transformed inside the primitive).
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/blocked_desc.h"
#include "src/x86/conv_algo.h"

namespace neomeg::dnn::x86 {
namespace {

using NonlineMode = param::ConvBiasBlocked::NonlineMode;

// The convolution's PrimitivePlan reads the weights from the buffer this plan keeps converted.
class BlockedConvPlan final : public Plan {
public:
    BlockedConvPlan(std::unique_ptr<PrimitivePlan> conv, Operand filter, const memory::desc& prim,
                    const dnnl::engine& engine, bool flip, bool filter_is_const)
        : m_conv(std::move(conv)),
          m_filter_md(filter.user_desc()),
          m_staged(filter.staged()),
          m_flip(flip),
          m_const(filter_is_const),
          m_user(m_filter_md, engine, DNNL_MEMORY_NONE),
          m_weights(prim, engine),
          m_into(prim, engine, DNNL_MEMORY_NONE),
          m_reorder(m_user, m_weights),
          m_copy(ElementCopy::plan(m_filter_md, prim, kSmallReorderBytes)) {}

    size_t workspace_in_bytes() const override {
        return std::max(m_conv->workspace_in_bytes(), m_staged ? m_filter_md.get_size() : 0);
    }
    const char* name() const override { return m_conv->name(); }

    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        const TensorND& filter = tensors[1];
        void* weights = m_weights.get_data_handle();
        // The cached weights this call reads, held until the convolution ran.
        std::shared_ptr<const WeightCache::Entry> held;
        if (m_const) {
            if (filter.raw_ptr() != m_converted_from) {
                convert(filter, ws, weights, stream);
                m_converted_from = filter.raw_ptr();
            }
        } else {
            WeightCache::Lookup found;
            if (filter.storage)
                found = WeightCache::instance().lookup(filter,
                                                       m_flip ? size_t{2} : TensorLayout::MAX_NDIM,
                                                       m_filter_md, m_weights.get_desc());
            if (found.hit) {
                weights = found.hit->data;
                held = std::move(found.hit);
            } else if (found.fill) {
                weights = found.fill->data;
                convert(filter, ws, weights, stream);
                stream.wait();  // filled before another call may read it
                WeightCache::instance().commit(found.fill);
                held = std::move(found.fill);
            } else {
                convert(filter, ws, weights, stream);
            }
        }
        std::array<TensorND, 5> t;
        std::copy(tensors.begin(), tensors.begin() + 5, t.begin());
        t[1] = TensorND(weights, filter.layout);
        m_conv->run(t, ws, stream);
    }

private:
    // The filter into the primitive's layout at `into`.
    void convert(const TensorND& filter, Workspace ws, void* into, dnnl::stream& stream) {
        void* user = filter.raw_ptr();
        if (m_staged) {
            // The workspace is free until the convolution runs.
            copy_to_dense(m_flip ? reversed_from(filter, 2) : filter, ws.ptr);
            user = ws.ptr;
        }
        if (m_copy) {
            m_copy->run(user, into);
        } else {
            m_user.set_data_handle(user);
            m_into.set_data_handle(into);
            run_reorder(m_reorder, stream, m_user, m_into);
        }
    }

    std::unique_ptr<PrimitivePlan> m_conv;
    memory::desc m_filter_md;
    bool m_staged, m_flip, m_const;
    memory m_user, m_weights, m_into;  // m_into: the reorder's destination, wherever it is
    dnnl::reorder m_reorder;
    std::optional<ElementCopy> m_copy;  // the reorder, where small
    const void* m_converted_from = nullptr;
};

class ConvBiasBlockedImpl final : public DnnlKernel<ConvBiasBlocked> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        BlockedConvShapes s = blocked_conv_shapes(*this, in);
        const TensorLayout &src = in[0], &filter = in[1], &bias = in[2], &z = in[3], &dst = out[0];
        const bool has_bias = bias.ndim != 0, has_z = z.ndim != 0;
        auto g = conv_geometry(ConvArgs::of(m_param), s.plain_src, filter, s.plain_dst);
        if (!g || (has_bias && !per_channel(bias, s.plain_dst)))
            return nullptr;
        const size_t ic = s.plain_src[1], oc = s.plain_dst[1];
        auto dst_md = blocked_desc(s.dst, oc);
        std::optional<memory::desc> src_md =
                s.src_blocked ? blocked_desc(TensorLayout(src, src.dtype), ic)
                              : any_desc(s.plain_src);
        if (!dst_md || !src_md)
            return nullptr;
        const dnnl::engine& engine = x86_handle().engine();
        memory::desc w_md = any_weights_desc(filter, *g);
        using dnnl::convolution_forward;
        auto make_pd_of = [&](dnnl::algorithm alg, const memory::desc& src_d,
                              const memory::desc& dst_d) {
            auto kind = alg == dnnl::algorithm::convolution_winograd && !m_param.filter_is_const
                                ? dnnl::prop_kind::forward_training
                                : dnnl::prop_kind::forward_inference;
            auto desc = has_bias ? convolution_forward::desc(
                                           kind, alg, src_d, w_md,
                                           memory::desc({static_cast<memory::dim>(oc)},
                                                        *dnnl_type_of(bias.dtype),
                                                        memory::format_tag::any),
                                           dst_d, g->stride, g->dilate, g->pad, g->pad)
                                 : convolution_forward::desc(kind, alg, src_d, w_md, dst_d,
                                                             g->stride, g->dilate, g->pad, g->pad);
            return convolution_forward::primitive_desc(
                    desc, post_ops_attr(m_param.nonlineMode, has_z), engine);
        };
        // The blocked layouts as they are, where a fast implementation takes them; else the
        // primitive's own choice, which the operands reorder to and from (oneDNN has no fast
        // kernel for a blocked src of a few channels, LeNet's 6, and would run its reference).
        auto make_pd = [&](dnnl::algorithm alg) {
            auto pd = make_pd_of(alg, *src_md, *dst_md);
            if (is_reference_impl(pd.impl_info_str()))
                pd = make_pd_of(alg, any_desc(s.plain_src), *dst_md);
            if (is_reference_impl(pd.impl_info_str()))
                pd = make_pd_of(alg, any_desc(s.plain_src), any_desc(s.plain_dst));
            return pd;
        };
        const TensorLayout layouts[] = {src, filter, bias, z, dst};
        std::string pass = str_cat("fwd_blocked nonline", static_cast<int>(m_param.nonlineMode),
                                   m_param.filter_is_const ? " const" : "");
        auto pd = choose_conv_pd(
                x86_handle(), conv_case_key(pass, *g, layouts),
                default_conv_algorithm(m_param.filter_is_const ? ConvPass::forward_const_filter
                                                               : ConvPass::forward,
                                       *g, s.plain_src, filter, s.plain_dst),
                make_pd);

        auto conv = std::make_unique<PrimitivePlan>(engine, pd.impl_info_str());
        if (has_z) {
            // Step 0 copies z into dst's buffer, which the sum post-op adds to.
            dnnl::reorder::primitive_desc rpd(engine, *dst_md, engine, pd.dst_desc(),
                                              user_scratchpad());
            conv->add_step(dnnl::reorder(rpd), rpd);
            conv->add_at(3, DNNL_ARG_FROM, blocked_operand(z, oc), *dst_md, false);
        }
        conv->add_step(convolution_forward(pd), pd);
        conv->add(DNNL_ARG_SRC, s.src_blocked ? blocked_operand(src, ic) : data_operand(src),
                  pd.src_desc(), false);
        // Run() points it at the converted weights, which are in the primitive's layout.
        memory::desc prim_w = pd.weights_desc();
        conv->add(DNNL_ARG_WEIGHTS,
                  Operand::of(filter, false, [&](const TensorLayout&) { return prim_w; }), prim_w,
                  false);
        if (has_bias)
            conv->add(DNNL_ARG_BIAS,
                      Operand::of(bias, false,
                                  [](const TensorLayout& l) {
                                      return plain_desc({static_cast<memory::dim>(l[1])},
                                                        {l.stride[1]}, *dnnl_type_of(l.dtype));
                                  }),
                      pd.bias_desc(), false);
        else
            conv->skip_tensor();
        conv->skip_tensor();  // z, read by step 0
        conv->add(DNNL_ARG_DST, blocked_operand(dst, oc), pd.dst_desc(), true);
        if (has_z)
            conv->use_operand(0, DNNL_ARG_TO, conv->num_operands() - 1);
        conv->finalize();
        return std::make_unique<BlockedConvPlan>(std::move(conv), weights_operand(filter, *g),
                                                 prim_w, engine, g->flip, m_param.filter_is_const);
    }
};

}  // namespace
NM_REGISTER_X86(ConvBiasBlocked, ConvBiasBlockedImpl);
}  // namespace neomeg::dnn::x86
