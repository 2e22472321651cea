// Convolutions whose two activations come in different layouts, one channels-last and one plain:
// a traced graph's transposed NHWC batch beside the graph's plain output, or eager mode's plain
// gradient seed beside a channels-last src. conv_common.h's rule pins oneDNN's nhwc layout only
// when both activations are channels-last; a mix lets the primitive choose (any) and reorders the
// channels-last operand in. Every pass (forward, ConvBias, both gradients), in both directions of
// the mix, against naive on contiguous copies: regular, grouped, depthwise, strided, 1x1 (the
// plain-gemm rule on the plain side), 3-D; batch 1 and odd channel counts.
#include <random>

#include "naive/convolution.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_common.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

TensorLayout act(const TensorShape& s, bool cl) {
    TensorLayout l(s, dtype::Float32);
    return cl ? channels_last_layout(l, l.dtype) : l;
}

// Runs Op on the x86 handle with inputs and outputs in exactly these layouts (an empty layout: no
// such input), and on naive with contiguous inputs; expects the same values. Returns the x86
// kernel, which is neither naive nor oneDNN's reference one.
template <class Op>
std::string check_layouts(Handle& handle, const typename Op::Param& p,
                          const std::vector<TensorLayout>& in_layouts,
                          const std::vector<TensorLayout>& out_layouts, double eps = 1e-4) {
    std::mt19937 rng(11);
    std::vector<HostTensor> plain, laid;
    std::vector<TensorND> in_nds, out_nds;
    for (const TensorLayout& l : in_layouts) {
        HostTensor t(TensorLayout(l, l.dtype));  // contiguous, of l's shape
        fill_uniform(t, -1, 1, rng);
        HostTensor c(l);
        c.set_values(t.values());
        plain.push_back(std::move(t));
        laid.push_back(std::move(c));
    }
    auto ref = Handle::make_naive()->create_operator<Op>();
    ref->param() = p;
    auto want = run_op(*ref, plain);
    auto op = handle.create_operator<Op>();
    op->param() = p;
    for (auto& t : laid)
        in_nds.push_back(t.nd());
    std::vector<HostTensor> got;
    for (const TensorLayout& l : out_layouts)
        got.emplace_back(l);
    for (auto& g : got)
        out_nds.push_back(g.nd());
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_layouts, out_layouts));
    op->exec(in_nds, out_nds, {ws.data(), ws.size()});
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
        EXPECT_TRUE(tensors_near(got[i], want[i], eps))
                << op->param_str() << " output " << i << " " << got[i].layout().to_string();
    // Never naive, nor oneDNN's reference kernel (one side pinned to nhwc and the other `any` got
    // `ref:any` for a depthwise filter gradient: x86-backend-log.md, "Mixed layouts: nhwc only
    // where both sides are").
    const std::string kernel = last_kernel(*op);
    EXPECT_NE(kernel, "naive");
    EXPECT_EQ(kernel.find("ref:"), std::string::npos) << kernel;
    return kernel;
}

struct Case {
    param::Convolution p;
    TensorShape src, filter, dst;
    // conv_common.h's nhwc_pinned for a channels-last src beside a plain dst, and the reverse
    bool pinned_src_cl = false, pinned_dst_cl = false;
};

// Regular 3x3 (batch 1, 5 -> 7 channels, a 9x8 image), grouped and strided (3 groups), depthwise
// (5 channels, batch 1; nhwc either way), 1x1 on 12x12 (144 pixels: at or above
// kMinPointwiseGemmPixels, so the plain side may keep NCHW for the gemm kernel; nhwc where dst,
// the larger, is channels-last), and 3-D (ndhwc).
std::vector<Case> cases() {
    return {Case{conv_param({1, 1}, {1, 1}, {1, 1}), {1, 5, 9, 8}, {7, 5, 3, 3}, {1, 7, 9, 8}},
            Case{conv_param({2, 2}, {1, 1}, {1, 1}, 3), {2, 9, 9, 7}, {6, 3, 3, 3}, {2, 6, 5, 4}},
            Case{conv_param({1, 1}, {1, 1}, {1, 1}, 5),
                 {1, 5, 8, 9},
                 {5, 1, 3, 3},
                 {1, 5, 8, 9},
                 true,
                 true},
            Case{conv_param({1, 1}, {0, 0}, {1, 1}),
                 {2, 8, 12, 12},
                 {16, 8, 1, 1},
                 {2, 16, 12, 12},
                 false,
                 true},
            Case{conv_param({1, 1, 1}, {1, 1, 1}, {1, 1, 1}),
                 {1, 3, 4, 5, 6},
                 {4, 3, 3, 3, 3},
                 {1, 4, 4, 5, 6}}};
}

}  // namespace

constexpr auto kDirect = dnnl::algorithm::convolution_direct;
constexpr auto kWinograd = dnnl::algorithm::convolution_winograd;

// The rule itself: nhwc (ndhwc) for two channels-last activations, and for a mix only where the
// case says (depthwise; 1x1 with the larger side channels-last); otherwise the channels-last
// tensor is `any` and the plain one as beside a plain tensor.
TEST_F(X86, ConvPinsNhwcOnlyWhereTheRuleSays) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    for (const Case& k : cases()) {
        SCOPED_TRACE(k.src.to_string());
        x86::ConvDims g;
        g.stride.assign(k.src.ndim - 2, 1);
        g.dilate.assign(k.src.ndim - 2, 0);
        g.pad.assign(k.src.ndim - 2, 1);
        g.group = k.p.group;
        g.depthwise = k.p.group > 1 && k.src[1] == k.p.group;
        g.pointwise = k.filter[2] == 1 && k.p.group == 1;  // the gemm rule applies
        auto nhwc = [](const TensorLayout& l) {
            return dnnl::memory::desc(x86::dims_of(l), dt::f32,
                                      l.ndim == 4 ? tag::acdb : tag::acdeb);
        };
        const TensorLayout cs = act(k.src, true), ps = act(k.src, false), cd = act(k.dst, true),
                           pd = act(k.dst, false);
        for (auto pass : {x86::ConvPass::forward, x86::ConvPass::backward_data,
                          x86::ConvPass::backward_filter}) {
            // Winograd reads blocked layouts only: nothing is pinned for it, a pair either.
            EXPECT_TRUE(x86::any_desc(cs, g, pass, cd, kWinograd) == x86::any_desc(cs));
            EXPECT_TRUE(x86::any_desc(cd, g, pass, cs, kWinograd) == x86::any_desc(cd));
            EXPECT_TRUE(x86::any_desc(cs, g, pass, cd, kDirect) == nhwc(cs));
            EXPECT_TRUE(x86::any_desc(cd, g, pass, cs, kDirect) == nhwc(cd));
            EXPECT_TRUE(x86::any_desc(ps, g, pass, pd, kDirect) == x86::any_desc(ps, g, pass));
            EXPECT_TRUE(x86::any_desc(cs, g, pass, pd, kDirect) ==
                        (k.pinned_src_cl ? nhwc(cs) : x86::any_desc(cs)));
            EXPECT_TRUE(x86::any_desc(pd, g, pass, cs, kDirect) ==
                        (k.pinned_src_cl ? nhwc(pd) : x86::any_desc(pd, g, pass)));
            EXPECT_TRUE(x86::any_desc(cd, g, pass, ps, kDirect) ==
                        (k.pinned_dst_cl ? nhwc(cd) : x86::any_desc(cd)));
            EXPECT_TRUE(x86::any_desc(ps, g, pass, cd, kDirect) ==
                        (k.pinned_dst_cl ? nhwc(ps) : x86::any_desc(ps, g, pass)));
        }
    }
}

TEST_F(X86, ConvolutionMixedLayoutsMatchNaive) {
    for (const Case& k : cases()) {
        for (bool src_cl : {true, false}) {
            SCOPED_TRACE(testing::Message() << k.src.to_string() << (src_cl ? " cl" : " plain"));
            const TensorLayout f(k.filter, dtype::Float32);
            // forward: src and dst
            check_layouts<ConvolutionForward>(*handle, k.p, {act(k.src, src_cl), f},
                                              {act(k.dst, !src_cl)});
            // input gradient: diff and grad
            check_layouts<ConvolutionBackwardData>(*handle, k.p, {f, act(k.dst, src_cl)},
                                                   {act(k.src, !src_cl)});
            // filter gradient: src and diff, two inputs
            check_layouts<ConvolutionBackwardFilter>(
                    *handle, k.p, {act(k.src, src_cl), act(k.dst, !src_cl)}, {f}, 1e-3);
        }
    }
}

// ConvBias: src beside a dst of the other layout, with a per-channel bias and z (in dst's layout,
// as the eager rule lays it) and a nonlinearity.
TEST_F(X86, ConvBiasMixedLayoutsMatchNaive) {
    using Act = param::ConvBias::NonlineMode;
    for (const Case& k : cases()) {
        TensorShape bias = k.dst;
        for (size_t i = 0; i < bias.ndim; ++i)
            bias[i] = i == 1 ? k.dst[1] : 1;
        for (bool src_cl : {true, false})
            for (Act a : {Act::IDENTITY, Act::RELU}) {
                SCOPED_TRACE(testing::Message()
                             << k.src.to_string() << (src_cl ? " cl" : " plain"));
                check_layouts<ConvBias>(*handle, conv_bias_param(k.p, a),
                                        {act(k.src, src_cl), TensorLayout(k.filter, dtype::Float32),
                                         TensorLayout(bias, dtype::Float32), act(k.dst, !src_cl)},
                                        {act(k.dst, !src_cl)});
            }
    }
}

// Two channels-last activations of a shape the default rule gives Winograd (3x3, stride 1, 32+
// channels, enough 4x4 tiles): Winograd between reorders where the CPU has it, the direct nhwc
// kernel where not; either way naive's values, every pass.
TEST_F(X86, ChannelsLastPairsOfWinogradShapesMatchNaive) {
    const auto p = conv_param({1, 1}, {1, 1}, {1, 1});
    for (const TensorShape& src : {TensorShape{2, 32, 28, 28}, TensorShape{1, 40, 44, 36}}) {
        SCOPED_TRACE(src.to_string());
        const TensorShape dst{src[0], 48, src[2], src[3]};
        const TensorLayout f({48, src[1], 3, 3}, dtype::Float32);
        check_layouts<ConvolutionForward>(*handle, p, {act(src, true), f}, {act(dst, true)}, 1e-3);
        check_layouts<ConvolutionBackwardData>(*handle, p, {f, act(dst, true)}, {act(src, true)},
                                               1e-3);
        check_layouts<ConvolutionBackwardFilter>(*handle, p, {act(src, true), act(dst, true)}, {f},
                                                 1e-2);
    }
}
