// ChannelBlock, ChannelUnblock, ConvBiasBlocked, PoolingBlocked and PoolingBackward on blocked
// memory (eager mode's) on the x86 handle against naive:
// blocks of 8 and 16 (oneDNN's nChw8c and nChw16c), channel counts that fill their last block and
// that do not, batch 1, odd spatial sizes, strided operands. Outputs start as NaN, so a kernel that
// leaves the padding channels unwritten fails. Which implementation oneDNN picks is not asserted,
// only that oneDNN ran.
#include "naive/channel_blocked.h"
#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/param_base.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Nonline = param::ConvBias::NonlineMode;

// Runs `op` into outputs filled with NaN, on the inputs' own memory (no copies: the filter
// conversion test needs the addresses).
HostTensor run_into_nan(OperatorBase& op, std::initializer_list<const HostTensor*> in) {
    std::vector<TensorLayout> layouts;
    std::vector<TensorND> nds;
    for (const HostTensor* t : in) {
        layouts.push_back(t->layout());
        nds.push_back(t->nd());
    }
    TensorLayout out;
    op.deduce_layout(layouts, {&out, 1});
    HostTensor y(out);
    y.set_values(std::vector<double>(out.total_nr_elems(), std::nan("")));
    TensorND y_nd = y.nd();
    std::vector<std::byte> ws(op.get_workspace_in_bytes(layouts, {&out, 1}));
    op.exec(nds, {&y_nd, 1}, {ws.data(), ws.size()});
    return y;
}

// The x86 op's output (into NaN) against naive's; returns the kernel the x86 op ran.
template <class Op>
std::string check(Handle& handle, const typename Op::Param& p, const std::vector<HostTensor>& in,
                  double eps = 1e-4) {
    auto run = [](OperatorBase& op, const std::vector<HostTensor>& t) {
        switch (t.size()) {
            case 1:
                return run_into_nan(op, {&t[0]});
            default:
                return run_into_nan(op, {&t[0], &t[1], &t[2], &t[3]});
        }
    };
    auto op = handle.create_operator<Op>();
    op->param() = p;
    auto got = run(*op, in);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    EXPECT_TRUE(tensors_near(got, run(*ref, in), eps)) << op->param_str();
    return last_kernel(*op);
}

// A blocked tensor with zeros past `channels`, from random plain values.
HostTensor random_blocked(TensorShape plain, size_t block, std::mt19937& rng) {
    return block_ref(random_tensor(plain, rng), block);
}

// The same values in a layout whose rows are padded.
HostTensor strided_copy(const HostTensor& t) {
    HostTensor s(padded_layout(t.layout()));
    s.set_values(t.values());
    return s;
}

constexpr size_t kBlocks[] = {8, 16};
constexpr size_t kChannels[] = {3, 16, 20, 32};

}  // namespace

TEST_F(X86, ChannelBlockAndUnblockMatchNaive) {
    std::mt19937 rng(11);
    for (size_t block : kBlocks)
        for (size_t c : kChannels)
            for (TensorShape s : {TensorShape{1, c, 7, 9}, TensorShape{2, c, 5, 3}}) {
                auto x = random_tensor(s, rng);
                param::ChannelBlock bp;
                bp.block = static_cast<uint32_t>(block);
                EXPECT_TRUE(check<ChannelBlock>(*handle, bp, {x}).starts_with("onednn:"));
                check<ChannelBlock>(*handle, bp, {strided_copy(x)});
                auto xb = block_ref(x, block);
                param::ChannelUnblock up;
                up.channels = static_cast<uint32_t>(c);
                EXPECT_TRUE(check<ChannelUnblock>(*handle, up, {xb}).starts_with("onednn:"));
                check<ChannelUnblock>(*handle, up, {strided_copy(xb)});
            }
}

TEST_F(X86, ConvBiasBlockedMatchesNaive) {
    std::mt19937 rng(13);
    struct Case {
        size_t n, ic, oc, h, w, k;
        param::Convolution p;
    };
    const Case cases[] = {
            {1, 3, 16, 9, 7, 3, conv_param({1, 1}, {1, 1}, {1, 1})},
            {1, 16, 20, 7, 9, 3, conv_param({2, 2}, {1, 1}, {1, 1})},
            {2, 20, 32, 5, 5, 1, conv_param({1, 1}, {0, 0}, {1, 1})},
            {1, 32, 16, 7, 7, 3, conv_param({1, 1}, {2, 2}, {2, 2}, 1, true)},
            // Depthwise (a channel count that fills its blocks and one that does not, strided)
            // and groups of whole blocks: the groups the graph's layout pass blocks.
            {2, 20, 20, 7, 9, 3, conv_param({1, 1}, {1, 1}, {1, 1}, 20)},
            {1, 32, 32, 8, 8, 3, conv_param({2, 2}, {1, 1}, {1, 1}, 32)},
            {1, 32, 64, 5, 5, 3, conv_param({1, 1}, {1, 1}, {1, 1}, 2)},
    };
    for (size_t block : kBlocks)
        for (const Case& k : cases)
            for (Nonline act : {Nonline::IDENTITY, Nonline::RELU, Nonline::SIGMOID}) {
                auto w = random_tensor({k.oc, k.ic / k.p.group, k.k, k.k}, rng);
                auto b = random_tensor({1, k.oc, 1, 1}, rng);
                auto p = blocked_conv_param(k.p, act, block);
                auto op = handle->create_operator<ConvBiasBlocked>();
                op->param() = p;
                TensorLayout in[] = {TensorLayout({k.n, k.ic, k.h, k.w}, dtype::Float32),
                                     w.layout(), b.layout(),
                                     TensorLayout(TensorShape{}, dtype::Float32)};
                TensorLayout dst;
                op->deduce_layout(in, {&dst, 1});
                TensorShape plain_dst{k.n, k.oc, dst[2], dst[3]};
                auto z = random_blocked(plain_dst, block, rng);
                auto src_plain = random_tensor({k.n, k.ic, k.h, k.w}, rng);
                auto src_blocked = block_ref(src_plain, block);
                for (const HostTensor& src : {src_plain, src_blocked}) {
                    EXPECT_TRUE(check<ConvBiasBlocked>(*handle, p, {src, w, b, z})
                                        .starts_with("onednn:"))
                            << param::to_string(p);
                    check<ConvBiasBlocked>(*handle, p, {src, w, absent_tensor(), absent_tensor()});
                }
                check<ConvBiasBlocked>(*handle, p,
                                       {strided_copy(src_blocked), w, b, strided_copy(z)});
            }
}

// filter_is_const: the filter is converted on the first call and again only at a new address; the
// kernel then does not see new values at the old address (the promise the graph makes), while
// without the flag it converts on every call.
TEST_F(X86, ConvBiasBlockedConvertsAConstantFilterOnce) {
    std::mt19937 rng(17);
    for (size_t block : kBlocks) {
        auto x = random_blocked({1, 16, 6, 6}, block, rng);
        auto w = random_tensor({16, 16, 3, 3}, rng), w2 = random_tensor({16, 16, 3, 3}, rng);
        auto conv = conv_param({1, 1}, {1, 1}, {1, 1});
        auto none = absent_tensor();
        auto naive = Handle::make_naive();
        auto ref = naive->create_operator<ConvBiasBlocked>();
        ref->param() = blocked_conv_param(conv, Nonline::IDENTITY, block);
        auto want1 = run_into_nan(*ref, {&x, &w, &none, &none});
        auto want2 = run_into_nan(*ref, {&x, &w2, &none, &none});

        for (bool is_const : {true, false}) {
            auto op = handle->create_operator<ConvBiasBlocked>();
            op->param() = blocked_conv_param(conv, Nonline::IDENTITY, block, is_const);
            HostTensor filter = w.contiguous();
            EXPECT_TRUE(tensors_near(run_into_nan(*op, {&x, &filter, &none, &none}), want1, 1e-4));
            filter.set_values(w2.values());  // same address, new values
            EXPECT_TRUE(tensors_near(run_into_nan(*op, {&x, &filter, &none, &none}),
                                     is_const ? want1 : want2, 1e-4))
                    << "filter_is_const=" << is_const;
            // A new address (w2's, alive beside filter's) is converted anew.
            EXPECT_TRUE(tensors_near(run_into_nan(*op, {&x, &w2, &none, &none}), want2, 1e-4));
        }
    }
}

TEST_F(X86, PoolingBlockedMatchesNaive) {
    std::mt19937 rng(19);
    using Mode = param::Pooling::Mode;
    for (size_t block : kBlocks)
        for (size_t c : kChannels)
            for (Mode m : {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING}) {
                param::Pooling p;
                p.mode = m;
                p.window = {3, 3};
                p.stride = {2, 2};
                p.padding = {1, 1};
                auto x = random_blocked({1, c, 9, 7}, block, rng);
                // MAX runs our loop (naive's NaN rule), the averages oneDNN.
                EXPECT_NE(check<PoolingBlocked>(*handle, p, {x}), "naive");
                check<PoolingBlocked>(*handle, p, {strided_copy(x)});
            }
}

// 1-D and 3-D windows (oneDNN's pooling on nCw8c/16c and nCdhw8c/16c; MAX forward runs our loop
// along the block, which keeps naive's NaN rule), every mode, padded and strided, on a channel
// count that does not fill its last block. Never naive's kernel.
TEST_F(X86, PoolingBlockedOneAndThreeDimensionalMatchesNaive) {
    std::mt19937 rng(21);
    using Mode = param::Pooling::Mode;
    for (size_t block : kBlocks)
        for (Mode m : {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING}) {
            param::Pooling p;
            p.mode = m;
            p.window = {3};
            p.stride = {2};
            p.padding = {1};
            EXPECT_NE(check<PoolingBlocked>(*handle, p, {random_blocked({2, 20, 9}, block, rng)}),
                      "naive");
            p.window = {2, 3, 3};
            p.stride = {2, 2, 1};
            p.padding = {0, 1, 1};
            auto x = random_blocked({2, 20, 5, 6, 7}, block, rng);
            EXPECT_NE(check<PoolingBlocked>(*handle, p, {x}), "naive");
            check<PoolingBlocked>(*handle, p, {strided_copy(x)});
        }
}

// Eager mode's pooling backward on blocked tensors (imperative/src/blocked_dispatch.cpp): the
// plain PoolingBackward with every operand a blocked tensor seen as planes (blocks_as_planes;
// oneDNN's pooling backward on them, MAX rerunning the forward), against naive's PoolingBackward
// on the plain tensors, blocked afterwards: every mode, 1-D to 3-D, padded, overlapping and
// tiling windows, channel counts 3, 13, 16 and 17 (the padding's gradient must come out zero
// where the output starts as NaN), and MAX with a NaN in src (naive's rule: the window's first
// NaN takes its gradient, where oneDNN's kernels skip NaNs).
TEST_F(X86, PoolingBackwardOnBlocksAsPlanesMatchesNaive) {
    std::mt19937 rng(23);
    using Mode = param::Pooling::Mode;
    struct Case {
        TensorShape src;
        std::vector<int32_t> window, stride, padding;
    };
    const Case cases[] = {{{2, 13, 11}, {3}, {2}, {1}},
                          {{2, 17, 9, 7}, {3, 3}, {2, 2}, {1, 1}},
                          {{3, 16, 8, 6}, {2, 2}, {2, 2}, {0, 0}},
                          {{1, 3, 7, 7}, {2, 3}, {1, 2}, {1, 0}},
                          {{2, 13, 4, 5, 6}, {2, 3, 3}, {2, 2, 1}, {0, 1, 1}}};
    auto naive = Handle::make_naive();
    auto planes = [](const HostTensor& t) {
        TensorND nd = t.nd();
        nd.layout = channel_blocked::blocks_as_planes(nd.layout);
        return nd;
    };
    for (size_t block : kBlocks)
        for (Mode m : {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING})
            for (const Case& k : cases)
                for (bool nan : {false, true}) {
                    if (nan && m != Mode::MAX)
                        continue;
                    SCOPED_TRACE(k.src.to_string() + " block " + std::to_string(block) +
                                 (nan ? " with a NaN" : ""));
                    param::Pooling p;
                    p.mode = m;
                    p.window = k.window;
                    p.stride = k.stride;
                    p.padding = k.padding;
                    auto x = random_tensor(k.src, rng);
                    if (nan) {
                        auto v = x.values();
                        v[v.size() / 3] = std::nan("");
                        x.set_values(v);
                    }
                    auto fwd = naive->create_operator<PoolingForward>();
                    fwd->param() = p;
                    auto y = std::move(run_op(*fwd, {x})[0]);
                    auto dy = random_tensor(y.shape(), rng);
                    auto bwd = naive->create_operator<PoolingBackward>();
                    bwd->param() = p;
                    auto want = block_ref(std::move(run_op(*bwd, {x, y, dy})[0]), block);

                    auto op = handle->create_operator<PoolingBackward>();
                    op->param() = p;
                    const HostTensor in[] = {block_ref(x, block), block_ref(y, block),
                                             block_ref(dy, block)};
                    std::vector<TensorND> nds;
                    std::vector<TensorLayout> layouts;
                    for (const HostTensor& t : in) {
                        nds.push_back(planes(t));
                        layouts.push_back(nds.back().layout);
                    }
                    HostTensor got(in[0].layout());
                    got.set_values(
                            std::vector<double>(got.layout().total_nr_elems(), std::nan("")));
                    TensorND got_nd = planes(got);
                    std::vector<std::byte> ws(
                            op->get_workspace_in_bytes(layouts, {&got_nd.layout, 1}));
                    op->exec(nds, {&got_nd, 1}, {ws.data(), ws.size()});
                    EXPECT_TRUE(tensors_near(got, want, 1e-5));
                    EXPECT_NE(last_kernel(*op), "naive");
                }
}
