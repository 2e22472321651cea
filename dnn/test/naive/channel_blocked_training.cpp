// The blocked training ops on the naive handle (ConvolutionBackwardDataBlocked,
// ConvolutionBackwardFilterBlocked, BatchNormForwardBlocked, BatchNormBackwardBlocked and the
// latter two's relu fusions): each against its plain operator on the unblocked values, blocked
// afterwards by the test's own index arithmetic (block_ref), for channel counts that fill their
// last block and that do not, both BatchNorm modes, a strided convolution's preset input size; and
// the errors.
#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

template <class Op>
std::vector<HostTensor> run(const typename Op::Param& p, const std::vector<HostTensor>& in,
                            const std::vector<TensorShape>& presets = {}) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Op>();
    op->param() = p;
    return run_op(*op, in, presets);
}

param::Convolution conv_param(int stride, int pad) {
    param::Convolution p;
    p.stride = {stride, stride};
    p.padding = {pad, pad};
    return p;
}

param::BatchNorm bn_param(param::BatchNorm::FwdMode mode) {
    param::BatchNorm p;
    p.fwd_mode = mode;
    p.momentum = 0.8f;
    return p;
}

constexpr size_t kBlocks[] = {4, 16};

// (N, C, spatial...) -> (N, ceil(C/block), spatial..., block).
TensorShape blocked(TensorShape s, size_t block) {
    s.ndim += 1;
    s[s.ndim - 1] = block;
    s[1] = (s[1] + block - 1) / block;
    return s;
}

}  // namespace

TEST(ConvolutionBackwardDataBlocked, MatchesThePlainOpBlocked) {
    std::mt19937 rng(5);
    for (size_t block : kBlocks)
        for (auto [ic, oc] : {std::pair<size_t, size_t>{3, 5}, {8, 16}})
            for (int stride : {1, 2}) {
                // A 7x7 input: the strided forward gives 4x4, from which 7 is not the default.
                TensorShape src{2, ic, 7, 7};
                auto filter = random_tensor({oc, ic, 3, 3}, rng);
                TensorShape diff_s{2, oc, stride == 1 ? 7u : 4u, stride == 1 ? 7u : 4u};
                auto diff = random_tensor(diff_s, rng);
                auto p = conv_param(stride, 1);
                auto want = run<ConvolutionBackwardData>(p, {filter, diff}, {src})[0];
                auto got = run<ConvolutionBackwardDataBlocked>(p, {filter, block_ref(diff, block)},
                                                               {blocked(src, block)});
                EXPECT_TRUE(tensors_near(got[0], block_ref(want, block), 1e-5))
                        << block << " " << ic << " " << oc << " " << stride;
            }
}

TEST(ConvolutionBackwardFilterBlocked, MatchesThePlainOp) {
    std::mt19937 rng(6);
    for (size_t block : kBlocks)
        for (auto [ic, oc] : {std::pair<size_t, size_t>{3, 5}, {8, 16}})
            for (int stride : {1, 2}) {
                auto src = random_tensor({2, ic, 7, 7}, rng);
                TensorShape diff_s{2, oc, stride == 1 ? 7u : 4u, stride == 1 ? 7u : 4u};
                auto diff = random_tensor(diff_s, rng);
                auto p = conv_param(stride, 1);
                TensorShape filter{oc, ic, 3, 3};
                auto want = run<ConvolutionBackwardFilter>(p, {src, diff}, {filter})[0];
                auto got = run<ConvolutionBackwardFilterBlocked>(
                        p, {block_ref(src, block), block_ref(diff, block)}, {filter});
                EXPECT_TRUE(tensors_near(got[0], want, 1e-5))
                        << block << " " << ic << " " << oc << " " << stride;
            }
}

TEST(BatchNormBlocked, ForwardAndBackwardMatchThePlainOps) {
    std::mt19937 rng(7);
    using Mode = param::BatchNorm::FwdMode;
    for (size_t block : kBlocks)
        for (size_t c : {3u, 16u, 20u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
                for (TensorShape pc : {TensorShape{1, c, 1, 1}, TensorShape{c}}) {
                    auto p = bn_param(mode);
                    auto x = random_tensor({3, c, 5, 4}, rng);
                    auto scale = random_tensor(pc, rng), bias = random_tensor(pc, rng);
                    auto rm = random_tensor(pc, rng);
                    auto rv = random_tensor(pc, rng);
                    rv.set_values(std::vector<double>(c, 1.5));
                    auto want = run<BatchNormForward>(p, {x, scale, bias, rm, rv});
                    auto got = run<BatchNormForwardBlocked>(
                            p, {block_ref(x, block), scale, bias, rm, rv});
                    ASSERT_EQ(got.size(), 5u);
                    EXPECT_TRUE(tensors_near(got[0], block_ref(want[0], block), 1e-5));
                    for (size_t i = 1; i < 5; ++i)
                        EXPECT_TRUE(tensors_near(got[i], want[i], 1e-5)) << "output " << i;

                    auto dy = random_tensor(x.shape(), rng);
                    auto want_b = run<BatchNormBackward>(p, {dy, x, scale, want[1], want[2]});
                    auto got_b = run<BatchNormBackwardBlocked>(
                            p,
                            {block_ref(dy, block), block_ref(x, block), scale, want[1], want[2]});
                    ASSERT_EQ(got_b.size(), 3u);
                    EXPECT_TRUE(tensors_near(got_b[0], block_ref(want_b[0], block), 1e-5));
                    EXPECT_TRUE(tensors_near(got_b[1], want_b[1], 1e-5));
                    EXPECT_TRUE(tensors_near(got_b[2], want_b[2], 1e-5));
                }
}

// The relu fusions against the plain ops with the relu and its mask written out here.
TEST(BatchNormReluBlocked, MatchesThePlainOpsWithTheReluApart) {
    using Mode = param::BatchNorm::FwdMode;
    std::mt19937 rng(9);
    for (size_t block : kBlocks)
        for (size_t c : {3u, 16u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
                auto p = bn_param(mode);
                const TensorShape pc{1, c, 1, 1};
                // Positive scales and small shifts: every channel has values on both sides of 0.
                auto x = random_tensor({3, c, 5, 4}, rng);
                auto scale = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                auto bias = random_tensor(pc, rng, dtype::Float32, -0.2, 0.2);
                auto rm = random_tensor(pc, rng, dtype::Float32, -0.2, 0.2);
                auto rv = random_tensor(pc, rng);
                rv.set_values(std::vector<double>(c, 1.5));
                auto want = run<BatchNormForward>(p, {x, scale, bias, rm, rv});
                std::vector<double> relu = want[0].values();
                size_t zeros = 0;
                for (double& v : relu)
                    if (v <= 0) {
                        v = 0;
                        ++zeros;
                    }
                // Both sides of the relu are exercised.
                EXPECT_GT(zeros, 0u);
                EXPECT_LT(zeros, relu.size());
                auto relu_t = HostTensor::from(x.shape(), relu, dtype::Float32);
                auto got = run<BatchNormReluForwardBlocked>(
                        p, {block_ref(x, block), scale, bias, rm, rv});
                ASSERT_EQ(got.size(), 5u);
                EXPECT_TRUE(tensors_near(got[0], block_ref(relu_t, block), 1e-5));
                for (size_t i = 1; i < 5; ++i)
                    EXPECT_TRUE(tensors_near(got[i], want[i], 1e-5)) << "output " << i;

                auto dy = random_tensor(x.shape(), rng);
                std::vector<double> masked = dy.values();
                for (size_t i = 0; i < masked.size(); ++i)
                    if (!(relu[i] > 0))
                        masked[i] = 0;
                auto masked_t = HostTensor::from(x.shape(), masked, dtype::Float32);
                auto want_b = run<BatchNormBackward>(p, {masked_t, x, scale, want[1], want[2]});
                auto got_b = run<BatchNormReluBackwardBlocked>(
                        p, {block_ref(dy, block), block_ref(x, block), scale, want[1], want[2],
                            block_ref(relu_t, block)});
                ASSERT_EQ(got_b.size(), 3u);
                EXPECT_TRUE(tensors_near(got_b[0], block_ref(want_b[0], block), 1e-5));
                EXPECT_TRUE(tensors_near(got_b[1], want_b[1], 1e-5));
                EXPECT_TRUE(tensors_near(got_b[2], want_b[2], 1e-5));
            }
}

TEST(ChannelBlockedTraining, BadInputsNameOpAndShapes) {
    auto h = Handle::make_naive();
    auto expect_error = [&](OperatorBase& op, std::vector<TensorLayout> in,
                            std::vector<TensorLayout> out, const std::string& part) {
        try {
            op.deduce_layout(in, out);
            ADD_FAILURE() << "no error for " << part;
        } catch (const ShapeError& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(op.param_str()), std::string::npos) << e.what();
        }
    };
    auto f32 = [](TensorShape s) { return TensorLayout(s, dtype::Float32); };
    auto data = h->create_operator<ConvolutionBackwardDataBlocked>();
    // 16 output channels in blocks of 8 are two blocks, not three.
    expect_error(*data, {f32({16, 4, 3, 3}), f32({1, 3, 5, 5, 8})}, {TensorLayout()},
                 "16 channels take 2 blocks of 8");
    expect_error(*data, {f32({16, 4, 3, 3}), f32({1, 16, 5, 5})}, {TensorLayout()},
                 "is not a blocked");
    auto filter = h->create_operator<ConvolutionBackwardFilterBlocked>();
    expect_error(*filter, {f32({1, 1, 5, 5, 8}), f32({1, 2, 3, 3, 8})}, {TensorLayout()},
                 "must be preset");
    auto fwd = h->create_operator<BatchNormForwardBlocked>();
    TensorLayout pc = f32({1, 20, 1, 1});
    std::vector<TensorLayout> outs(5);
    expect_error(*fwd, {f32({2, 3, 4, 4, 16}), pc, pc, pc, pc}, outs, "20 channels take 2");
    expect_error(*fwd, {f32({2, 3, 4, 4, 8}), f32({1, 20, 1}), pc, pc, pc}, outs, "scale");
    auto bwd = h->create_operator<BatchNormBackwardBlocked>();
    std::vector<TensorLayout> bouts(3);
    expect_error(*bwd, {f32({2, 3, 4, 4, 8}), f32({2, 3, 4, 5, 8}), pc, pc, pc}, bouts,
                 "differ in shape");
    auto relu_bwd = h->create_operator<BatchNormReluBackwardBlocked>();
    expect_error(*relu_bwd,
                 {f32({2, 3, 4, 4, 8}), f32({2, 3, 4, 4, 8}), pc, pc, pc, f32({2, 3, 4, 5, 8})},
                 bouts, "relu_dst");
}
