// Channels-last tensors (channels_last.h) on the x86 handle against naive on contiguous copies:
// every operator whose definition lets an output follow a channels-last input (layout_follows),
// run the way the eager runtime runs it (4-D and 5-D inputs channels-last, outputs laid out by
// apply_layout_follows), and which kernel it ran: channels-last must not send these operators to
// naive. A definition that gains layout_follows without a check here fails
// EveryFollowingOperatorIsChecked.
#include <set>

#include "naive/convolution.h"
#include "naive/pooling.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/layout_follows.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/x86_test.h"

#ifdef NEOMEG_WITH_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Input {
    TensorShape shape;
    DType dtype = dtype::Float32;
    double lo = -1, hi = 1;
};

// Runs `p` on x86 with channels-last 4-D/5-D inputs and eager-style outputs, and on naive with
// contiguous inputs; expects equal values, and the channels-last layout on every output the
// definition says follows a channels-last input. Returns the x86 operator's kernel.
template <class Op>
std::string check(Handle& handle, const typename Op::Param& p, const std::vector<Input>& inputs,
                  double eps = 1e-4, uint32_t seed = 3) {
    std::mt19937 rng(seed);
    std::vector<HostTensor> plain, cl;
    for (const Input& in : inputs) {
        HostTensor t(in.shape, in.dtype);
        fill_uniform(t, in.lo, in.hi, rng);
        TensorLayout l(in.shape, in.dtype);
        if (l.ndim == 4 || l.ndim == 5)
            l = channels_last_layout(l, l.dtype);
        HostTensor c(l);
        c.set_values(t.values());
        plain.push_back(std::move(t));
        cl.push_back(std::move(c));
    }
    auto ref = Handle::make_naive()->create_operator<Op>();
    ref->param() = p;
    auto want = run_op(*ref, plain);

    auto op = handle.create_operator<Op>();
    op->param() = p;
    std::vector<TensorLayout> in_layouts, out_layouts;
    std::vector<TensorND> in_nds, out_nds;
    for (auto& t : cl) {
        in_layouts.push_back(t.layout());
        in_nds.push_back(t.nd());
    }
    for (auto& w : want)
        out_layouts.emplace_back(w.shape(), w.dtype());
    apply_layout_follows(Op::kType, in_layouts, out_layouts);
    std::vector<HostTensor> got;
    for (auto& l : out_layouts)
        got.emplace_back(l);
    for (auto& g : got)
        out_nds.push_back(g.nd());
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_layouts, out_layouts));
    op->exec(in_nds, out_nds, {ws.data(), ws.size()});
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(tensors_near(got[i], want[i], eps))
                << "output " << i << " of " << op->param_str() << " on channels-last inputs";
        int src = layout_follows(Op::kType, i);
        bool expect_cl = src >= 0 && got[i].layout().ndim >= 4 &&
                         is_channels_last(in_layouts[static_cast<size_t>(src)]);
        if (expect_cl) {
            EXPECT_TRUE(is_channels_last(got[i].layout())) << got[i].layout().to_string();
        }
    }
    return last_kernel(*op);
}

}  // namespace

TEST_F(X86, ChannelsLastConvolution) {
    auto p = conv_param({1, 1}, {1, 1}, {1, 1});
    auto k = check<ConvolutionForward>(*handle, p, {{{2, 16, 9, 9}}, {{32, 16, 3, 3}}});
    EXPECT_TRUE(k.starts_with("onednn:")) << k;
    // strided, grouped, 3-D, a 3-channel image (the first layer)
    check<ConvolutionForward>(*handle, conv_param({2, 1}, {1, 0}, {1, 2}, 2),
                              {{{1, 6, 7, 5}}, {{4, 3, 3, 2}}});
    check<ConvolutionForward>(*handle, conv_param({1, 1, 1}, {1, 1, 1}, {1, 1, 1}),
                              {{{2, 8, 4, 5, 6}}, {{8, 8, 3, 3, 3}}});
    check<ConvolutionForward>(*handle, conv_param({1, 1}, {1, 1}, {1, 1}),
                              {{{2, 3, 8, 8}}, {{16, 3, 3, 3}}});
    // (N, C, 1, 1): channels-last and contiguous address the same memory
    check<ConvolutionForward>(*handle, conv_param({1, 1}, {0, 0}, {1, 1}),
                              {{{4, 16, 1, 1}}, {{8, 16, 1, 1}}});
    k = check<ConvolutionBackwardData>(*handle, p, {{{32, 16, 3, 3}}, {{2, 32, 9, 9}}});
    EXPECT_TRUE(k.starts_with("onednn:")) << k;
    k = check<ConvolutionBackwardFilter>(*handle, p, {{{2, 16, 9, 9}}, {{2, 32, 9, 9}}}, 1e-3);
    EXPECT_TRUE(k.starts_with("onednn:")) << k;
}

// A channels-last activation beside a plain one (a plain gradient seed, or a plain-only operator
// next to the convolution): the plain one is reordered to channels-last for oneDNN (conv_common.h's
// any_desc with a partner). Regular and depthwise, forward, both gradients, against naive.
TEST_F(X86, ChannelsLastBesidePlainConvolution) {
    auto cl = [](TensorShape s) {
        return channels_last_layout(TensorLayout(s, dtype::Float32), dtype::Float32);
    };
    auto plain = [](TensorShape s) { return TensorLayout(s, dtype::Float32); };
    struct Case {
        param::Convolution p;
        TensorShape src, filter, dst;
    };
    for (const Case& k :
         {Case{conv_param({1, 1}, {1, 1}, {1, 1}), {2, 16, 9, 9}, {32, 16, 3, 3}, {2, 32, 9, 9}},
          Case{conv_param({1, 1}, {1, 1}, {1, 1}, 16), {2, 16, 9, 9}, {16, 1, 3, 3}, {2, 16, 9, 9}},
          Case{conv_param({2, 2}, {1, 1}, {1, 1}, 16),
               {2, 16, 9, 9},
               {16, 1, 3, 3},
               {2, 16, 5, 5}}}) {
        Checker<ConvolutionForward> f(handle.get());
        f.set_param(k.p).exec_layouts({cl(k.src), plain(k.filter)});
        Checker<ConvolutionBackwardFilter> bf(handle.get());
        bf.set_param(k.p).set_epsilon(1e-3);
        bf.exec_layouts({cl(k.src), plain(k.dst)});
        bf.exec_layouts({plain(k.src), cl(k.dst)});
        Checker<ConvolutionBackwardData> bd(handle.get());
        bd.set_param(k.p).exec_layouts({plain(k.filter), cl(k.dst)});
    }
}

TEST_F(X86, ChannelsLastConvBias) {
    using Act = param::ConvBias::NonlineMode;
    auto c = conv_param({1, 1}, {1, 1}, {1, 1});
    for (Act act : {Act::IDENTITY, Act::RELU}) {
        auto k = check<ConvBias>(
                *handle, conv_bias_param(c, act),
                {{{2, 16, 8, 8}}, {{16, 16, 3, 3}}, {{1, 16, 1, 1}}, {{2, 16, 8, 8}}});
        EXPECT_TRUE(k.starts_with("onednn:")) << k;
    }
    check<ConvBias>(*handle, conv_bias_param(conv_param({2, 2}, {0, 0}, {1, 1}), Act::IDENTITY),
                    {{{2, 8, 8, 8}}, {{16, 8, 1, 1}}, {{1, 16, 1, 1}}, {TensorShape()}});
}

TEST_F(X86, ChannelsLastPooling) {
    using Mode = param::Pooling::Mode;
    for (Mode mode : {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING}) {
        for (auto p :
             {pool_param(mode, {2, 2}, {2, 2}, {0, 0}), pool_param(mode, {3, 3}, {2, 2}, {1, 1})}) {
            TensorShape src{2, 16, 9, 9},
                    dst{2, 16, (9 + 2 * size_t(p.padding[0]) - size_t(p.window[0])) / 2 + 1,
                        (9 + 2 * size_t(p.padding[1]) - size_t(p.window[1])) / 2 + 1};
            auto k = check<PoolingForward>(*handle, p, {{src}});
            EXPECT_NE(k, "naive");
            k = check<PoolingBackward>(*handle, p, {{src}, {dst}, {dst}});
            EXPECT_NE(k, "naive");
        }
    }
    param::AdaptivePooling a;
    a.shape = {3, 2};
    check<AdaptivePoolingForward>(*handle, a, {{{2, 5, 7, 6}}});
    check<AdaptivePoolingBackward>(*handle, a, {{{2, 5, 7, 6}}, {{2, 5, 3, 2}}, {{2, 5, 3, 2}}});
}

// Float32 and autocast's batch norm (16-bit data, float32 statistics and parameters), 4-D and
// 5-D, training and inference. oneDNN has bfloat16 batch norm kernels from AVX-512 up; below (the
// AVX2 cap), and for float16 everywhere, the float32 kernel runs between conversions: never naive.
TEST_F(X86, ChannelsLastBatchNorm) {
    struct Case {
        DType dt;
        double fwd_eps, bwd_eps;
    };
    for (Case c : {Case{dtype::Float32, 1e-4, 1e-3}, Case{dtype::BFloat16, 2e-2, 3e-2},
                   Case{dtype::Float16, 2e-2, 3e-2}})
        for (auto mode :
             {param::BatchNorm::FwdMode::TRAINING, param::BatchNorm::FwdMode::INFERENCE}) {
            param::BatchNorm p;
            p.fwd_mode = mode;
            for (TensorShape s : {TensorShape{4, 16, 7, 7}, TensorShape{2, 5, 3, 4, 6}}) {
                TensorShape pc = s;
                for (size_t i = 0; i < pc.ndim; ++i)
                    pc[i] = i == 1 ? s[1] : 1;
                Input x{s, c.dt}, var{pc, dtype::Float32, 0.5, 2};
                auto k = check<BatchNormForward>(*handle, p, {x, {pc}, {pc}, {pc}, var}, c.fwd_eps);
                EXPECT_NE(k, "naive") << c.dt.name();
                k = check<BatchNormBackward>(*handle, p, {x, x, {pc}, {pc}, var}, c.bwd_eps);
                EXPECT_NE(k, "naive") << c.dt.name();
            }
        }
}

TEST_F(X86, ChannelsLastElemwiseRunsAsOneDenseRow) {
    using Mode = param::Elemwise::Mode;
    param::Elemwise p;
    TensorShape s{2, 16, 9, 9};
    for (Mode m : {Mode::ADD, Mode::SWITCH_GT0, Mode::FUSE_MUL_ADD3}) {
        p.mode = m;
        size_t arity = m == Mode::FUSE_MUL_ADD3 ? 3 : 2;
        std::vector<Input> in(arity, Input{s});
        auto k = check<Elemwise>(*handle, p, in);
        EXPECT_TRUE(k.starts_with("hwy:")) << k;
    }
    p.mode = Mode::RELU;
    EXPECT_TRUE(check<Elemwise>(*handle, p, {{s}}).starts_with("hwy:"));
    // a per-channel operand (1, C, 1, 1) broadcast over channels-last: C is the dense run
    p.mode = Mode::MUL;
    EXPECT_TRUE(check<Elemwise>(*handle, p, {{s}, {{1, 16, 1, 1}}}).starts_with("hwy:"));
    EXPECT_TRUE(check<Elemwise>(*handle, p, {{{1, 16, 1, 1}}, {s}}).starts_with("hwy:"));
    // 5-D, and a scalar
    EXPECT_TRUE(check<Elemwise>(*handle, p, {{{2, 3, 4, 5, 6}}, {{1}}}).starts_with("hwy:"));
}

// Per-channel operands over channels-last tensors of odd sizes: the operand's block of H*W*C is
// copied once and repeated over N (expansion_of), in either operand order and ternary.
TEST_F(X86, ChannelsLastPerChannelRepeatsItsBlock) {
    using Mode = param::Elemwise::Mode;
    param::Elemwise p;
    for (TensorShape s : {TensorShape{6, 5, 3, 3}, TensorShape{5, 7, 7, 7}, TensorShape{4, 3, 1, 1},
                          TensorShape{4, 3, 2, 3, 5}}) {
        TensorShape c = s;
        for (size_t d = 0; d < c.ndim; ++d)
            c[d] = d == 1 ? s[1] : 1;
        for (Mode m : {Mode::SUB, Mode::TRUE_DIV, Mode::MAX}) {
            p.mode = m;
            std::string k = check<Elemwise>(*handle, p, {{s}, {c, dtype::Float32, 0.5, 2}});
            EXPECT_TRUE(k.starts_with("hwy:")) << k;
            k = check<Elemwise>(*handle, p, {{c}, {s, dtype::Float32, 0.5, 2}});
            EXPECT_TRUE(k.starts_with("hwy:")) << k;
        }
        p.mode = Mode::FUSE_MUL_ADD3;
        EXPECT_TRUE(check<Elemwise>(*handle, p, {{s}, {c}, {c}}).starts_with("hwy:"));
        EXPECT_TRUE(check<Elemwise>(*handle, p, {{c}, {s}, {c}}).starts_with("hwy:"));
    }
}

TEST_F(X86, ChannelsLastReduceRunsInMemoryOrder) {
    param::Reduce p;
    for (auto mode : {param::Reduce::Mode::MEAN, param::Reduce::Mode::MAX}) {
        p.mode = mode;
        for (int axis = 0; axis < 4; ++axis) {
            p.axis = axis;
            auto k = check<Reduce>(*handle, p, {{{3, 16, 5, 7}}});
            EXPECT_EQ(k, "hwy") << axis;
        }
        p.axis = 1;
        EXPECT_EQ(check<Reduce>(*handle, p, {{{2, 8, 3, 4, 5}}}), "hwy");
    }
}

TEST_F(X86, ChannelsLastTypeCvt) {
    param::TypeCvt p;
    p.dtype = DTypeEnum::BFloat16;
    auto k = check<TypeCvt>(*handle, p, {{{2, 16, 9, 9}}}, 1e-2);
    EXPECT_TRUE(k.starts_with("hwy")) << k;
}

// Elemwise on a channels-last and a row-major tensor of one shape: the eager rule makes dst
// channels-last; into either dst the operand in the other order is copied into dst's order first
// (not naive), and the values are right.
TEST_F(X86, ChannelsLastMixedElemwise) {
    TensorShape s{2, 4, 3, 5};
    HostTensor a(channels_last_layout(s, dtype::Float32)), b(s, dtype::Float32);
    std::mt19937 rng(5);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    std::vector<TensorLayout> in{a.layout(), b.layout()}, out{TensorLayout(s, dtype::Float32)};
    apply_layout_follows(OpType::Elemwise, in, out);
    EXPECT_TRUE(is_channels_last(out[0]));
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = param::Elemwise::Mode::ADD;
    auto got = run_op(*op, {a, b});
    auto ref = Handle::make_naive()->create_operator<Elemwise>();
    ref->param().mode = param::Elemwise::Mode::ADD;
    EXPECT_TRUE(tensors_near(got[0], run_op(*ref, {a.contiguous(), b})[0], 0));
    EXPECT_TRUE(last_kernel(*op).starts_with("hwy:")) << last_kernel(*op);
    // into a channels-last dst: the row-major operand is the copied one
    HostTensor cl_out(channels_last_layout(s, dtype::Float32));
    std::vector<TensorND> in_nd{a.nd(), b.nd()}, out_nd{cl_out.nd()};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(std::vector{a.layout(), b.layout()},
                                                         std::vector{cl_out.layout()}));
    op->exec(in_nd, out_nd, {ws.data(), ws.size()});
    EXPECT_TRUE(tensors_near(cl_out, got[0], 0));
    EXPECT_TRUE(last_kernel(*op).starts_with("hwy:")) << last_kernel(*op);
    // a broadcast view whose repeated axis is innermost in dst's order
    TensorLayout rep({2, 4, 3, 5}, {20, 5, 0, 1}, dtype::Float32);
    HostTensor r(TensorLayout({2, 4, 1, 5}, dtype::Float32));
    fill_uniform(r, -1, 1, rng);
    std::vector<TensorND> in2{a.nd(), TensorND(r.nd().raw_ptr(), rep)};
    ws.resize(
            op->get_workspace_in_bytes(std::vector{a.layout(), rep}, std::vector{cl_out.layout()}));
    op->exec(in2, out_nd, {ws.data(), ws.size()});
    EXPECT_TRUE(last_kernel(*op).starts_with("hwy:")) << last_kernel(*op);
    auto want = run_op(*ref, {a.contiguous(), r});
    EXPECT_TRUE(tensors_near(cl_out, want[0], 0));
}

// The operators the tests above run channels-last, against the definitions' layout_follows.
TEST_F(X86, ChannelsLastEveryFollowingOperatorIsChecked) {
    std::set<OpType> want;
    for (OpType t : kAllOpTypes)
        for (size_t o = 0; o < 8; ++o)
            if (layout_follows(t, o) != kFollowsNothing)
                want.insert(t);
    const std::set<OpType> covered = {OpType::ConvolutionForward,
                                      OpType::ConvolutionBackwardData,
                                      OpType::ConvBias,
                                      OpType::PoolingForward,
                                      OpType::PoolingBackward,
                                      OpType::AdaptivePoolingForward,
                                      OpType::AdaptivePoolingBackward,
                                      OpType::BatchNormForward,
                                      OpType::BatchNormBackward,
                                      OpType::Elemwise,
                                      OpType::TypeCvt,
                                      OpType::Reduce,
                                      OpType::ConvolutionBackwardFilter};
    for (OpType t : want)
        EXPECT_TRUE(covered.count(t)) << op_type_name(t)
                                      << " follows channels-last inputs (ops/defs layout_follows) "
                                         "but has no channels-last check in this file";
    for (OpType t : covered)
        EXPECT_TRUE(want.count(t)) << op_type_name(t) << " is checked here as following "
                                   << "channels-last inputs, but its definition says it does not";
}
