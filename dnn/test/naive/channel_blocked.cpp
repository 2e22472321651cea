// ChannelBlock, ChannelUnblock, ConvBiasBlocked and PoolingBlocked on the naive handle: known
// values, the blocking written out in the test (block_ref), the blocked ops against their plain
// forms (ConvBias, PoolingForward) blocked afterwards, strided inputs, and the errors.
#include "naive/channel_blocked.h"

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Nonline = param::ConvBias::NonlineMode;

template <class Op>
HostTensor run1(const typename Op::Param& p, const std::vector<HostTensor>& in) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Op>();
    op->param() = p;
    return std::move(run_op(*op, in)[0]);
}

param::ChannelBlock block_param(uint32_t block) {
    param::ChannelBlock p;
    p.block = block;
    return p;
}

param::ChannelUnblock unblock_param(uint32_t channels) {
    param::ChannelUnblock p;
    p.channels = channels;
    return p;
}

}  // namespace

TEST(ChannelBlock, KnownValues) {
    // src[0, c, 0, w] = 2c + w; blocks of two channels, the third channel's block padded.
    auto x = HostTensor::from({1, 3, 1, 2}, {0, 1, 2, 3, 4, 5});
    auto y = run1<ChannelBlock>(block_param(2), {x});
    EXPECT_TRUE(y.shape().eq_shape(TensorShape{1, 2, 1, 2, 2}));
    EXPECT_EQ(y.values(), (std::vector<double>{0, 2, 1, 3, 4, 0, 5, 0}));
    auto back = run1<ChannelUnblock>(unblock_param(3), {y});
    EXPECT_EQ(back.values(), x.values());
}

TEST(ChannelBlock, MatchesIndexArithmeticAndRoundTrips) {
    std::mt19937 rng(3);
    for (TensorShape s : {TensorShape{2, 5, 3, 7}, TensorShape{1, 16, 5, 5}, TensorShape{3, 20, 9},
                          TensorShape{1, 1, 2, 3, 4}, TensorShape{2, 7}})
        for (uint32_t block : {1u, 4u, 8u, 16u}) {
            auto x = random_tensor(s, rng);
            auto y = run1<ChannelBlock>(block_param(block), {x});
            EXPECT_TRUE(tensors_near(y, block_ref(x, block), 0)) << s.to_string() << " " << block;
            auto back = run1<ChannelUnblock>(unblock_param(static_cast<uint32_t>(s[1])), {y});
            EXPECT_TRUE(tensors_near(back, x, 0)) << s.to_string() << " " << block;
        }
}

TEST(ChannelBlock, StridedInputsAndOtherDtypes) {
    auto naive = Handle::make_naive();
    for (DType dt : {DType(dtype::Float32), DType(dtype::Int8), DType(dtype::Float16)}) {
        Checker<ChannelBlock> c(naive.get());
        c.set_param(block_param(4)).set_dtype(0, dt).set_noncontiguous(true);
        c.execs({{2, 6, 3, 5}});
        Checker<ChannelUnblock> u(naive.get());
        u.set_param(unblock_param(6)).set_dtype(0, dt).set_noncontiguous(true);
        u.execs({{2, 2, 3, 5, 4}});
    }
}

TEST(ConvBiasBlocked, MatchesConvBiasBlocked) {
    std::mt19937 rng(5);
    struct Case {
        TensorShape src, filter;
        param::Convolution p;
    };
    const Case cases[] = {
            {{1, 3, 7, 9}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{2, 6, 9, 7}, {4, 6, 3, 1}, conv_param({2, 1}, {1, 0}, {1, 2}, 1, true)},
            {{1, 8, 5, 5}, {8, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 4)},
            {{1, 3, 9}, {6, 3, 3}, conv_param({1}, {1}, {1})},
    };
    for (const Case& k : cases)
        for (Nonline act : {Nonline::IDENTITY, Nonline::RELU, Nonline::SIGMOID, Nonline::H_SWISH})
            for (uint32_t block : {4u, 8u})
                for (bool with_bias : {false, true}) {
                    auto x = random_tensor(k.src, rng), w = random_tensor(k.filter, rng);
                    auto plain = run1<ConvBias>(conv_bias_param(k.p, act),
                                                {x, w, absent_tensor(), absent_tensor()});
                    TensorShape bs = plain.shape();
                    for (size_t d = 0; d < bs.ndim; ++d)
                        bs[d] = d == 1 ? bs[1] : 1;
                    auto b = with_bias ? random_tensor(bs, rng) : absent_tensor();
                    auto z = random_tensor(plain.shape(), rng);
                    auto want = block_ref(run1<ConvBias>(conv_bias_param(k.p, act), {x, w, b, z}),
                                          block);
                    auto p = blocked_conv_param(k.p, act, block);
                    auto zb = block_ref(z, block);
                    // src blocked, and plain.
                    EXPECT_TRUE(tensors_near(
                            run1<ConvBiasBlocked>(p, {block_ref(x, block), w, b, zb}), want, 1e-6));
                    EXPECT_TRUE(tensors_near(run1<ConvBiasBlocked>(p, {x, w, b, zb}), want, 1e-6));
                    // Without z.
                    auto want_noz = block_ref(
                            run1<ConvBias>(conv_bias_param(k.p, act), {x, w, b, absent_tensor()}),
                            block);
                    EXPECT_TRUE(tensors_near(run1<ConvBiasBlocked>(p, {x, w, b, absent_tensor()}),
                                             want_noz, 1e-6));
                }
}

TEST(PoolingBlocked, MatchesPoolingBlocked) {
    std::mt19937 rng(7);
    using Mode = param::Pooling::Mode;
    for (Mode m : {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING})
        for (TensorShape s : {TensorShape{1, 5, 7, 9}, TensorShape{2, 16, 6, 5}})
            for (uint32_t block : {4u, 16u}) {
                param::Pooling p;
                p.mode = m;
                p.window = {3, 2};
                p.stride = {2, 1};
                p.padding = {1, 0};
                auto x = random_tensor(s, rng);
                auto want = block_ref(run1<PoolingForward>(p, {x}), block);
                auto got = run1<PoolingBlocked>(p, {block_ref(x, block)});
                EXPECT_TRUE(tensors_near(got, want, 1e-6)) << s.to_string();
            }
}

TEST(ChannelBlocked, BadInputsNameOpAndShapes) {
    auto h = Handle::make_naive();
    auto deduce = [&](OperatorBase& op, std::vector<TensorLayout> in) {
        TensorLayout out;
        op.deduce_layout(in, {&out, 1});
    };
    auto block = h->create_operator<ChannelBlock>();
    block->param().block = 0;
    expect_error<ParamError>(
            [&] {
                deduce(*block, {TensorLayout({1, 3, 2, 2}, dtype::Float32)});
            },
            {"ChannelBlock(block=0)", "block must be >= 1"});
    block->param().block = 8;
    expect_error<ShapeError>([&] { deduce(*block, {TensorLayout({5}, dtype::Float32)}); },
                             {"ChannelBlock(", "src must be (N, C, spatial...)"});

    auto unblock = h->create_operator<ChannelUnblock>();
    unblock->param().channels = 20;
    expect_error<ShapeError>(
            [&] {
                deduce(*unblock, {TensorLayout({1, 2, 2, 2, 8}, dtype::Float32)});
            },
            {"ChannelUnblock(channels=20)", "20 channels take 3 blocks of 8", lstr({1, 2, 2, 2, 8}),
             "has 2"});

    auto conv = h->create_operator<ConvBiasBlocked>();
    conv->param() = blocked_conv_param(conv_param({1, 1}, {0, 0}, {1, 1}), Nonline::RELU, 8);
    const TensorLayout none(TensorShape{}, dtype::Float32), w({4, 6, 1, 1}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                deduce(*conv, {TensorLayout({1, 1, 3, 3, 16}, dtype::Float32), w, none, none});
            },
            {"ConvBiasBlocked(", "has blocks of 16, the param says 8"});
    expect_error<ShapeError>(
            [&] {
                deduce(*conv, {TensorLayout({1, 2, 3, 3, 8}, dtype::Float32), w, none, none});
            },
            {"does not hold the 6 input channels"});
    expect_error<ShapeError>(
            [&] {
                deduce(*conv, {TensorLayout({1, 6, 3, 3}, dtype::Float32), w, none,
                               TensorLayout({1, 4, 3, 3}, dtype::Float32)});
            },
            {"z ", "must have the blocked dst's shape {1,1,3,3,8}"});
    expect_error<ShapeError>(
            [&] {
                deduce(*conv, {TensorLayout({1, 6, 3}, dtype::Float32), w, none, none});
            },
            {"is neither plain nor blocked"});

    auto pool = h->create_operator<PoolingBlocked>();
    expect_error<ShapeError>(
            [&] {
                deduce(*pool, {TensorLayout({1, 2, 3}, dtype::Float32)});
            },
            {"PoolingBlocked(", "src must be (N, Cb, spatial..., block)"});
    expect_error<ShapeError>(
            [&] {
                deduce(*pool, {TensorLayout({1, 2, 1, 1, 8}, dtype::Float32)});
            },
            {"PoolingBlocked(", "larger than the padded input"});
}
