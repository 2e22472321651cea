// The blocked BatchNorms' residual add + relu fusions on the naive handle
// (BatchNormAddReluForwardBlocked, BatchNormAddReluBackwardBlocked): against the plain
// BatchNormForward and BatchNormBackward on the unblocked values, with the add, the relu and the
// mask of the gradients' sum written out here and blocked by the test's own index arithmetic
// (block_ref); channel counts that fill their last block and that do not, both BatchNorm modes;
// and the errors.
#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::BatchNorm::FwdMode;

template <class Op>
std::vector<HostTensor> run(const param::BatchNorm& p, const std::vector<HostTensor>& in) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Op>();
    op->param() = p;
    return run_op(*op, in);
}

HostTensor from(const TensorShape& shape, const std::vector<double>& values) {
    return HostTensor::from(shape, values, dtype::Float32);
}

}  // namespace

TEST(BatchNormAddReluBlocked, MatchesThePlainOpsWithTheAddAndReluApart) {
    std::mt19937 rng(11);
    for (size_t block : {4u, 16u})
        for (size_t c : {3u, 16u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
                param::BatchNorm p;
                p.fwd_mode = mode;
                p.momentum = 0.8f;
                const TensorShape pc{1, c, 1, 1}, shape{3, c, 5, 4};
                auto x = random_tensor(shape, rng);
                auto z = random_tensor(shape, rng, dtype::Float32, -0.5, 0.5);
                auto scale = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                auto bias = random_tensor(pc, rng, dtype::Float32, -0.2, 0.2);
                auto rm = random_tensor(pc, rng, dtype::Float32, -0.2, 0.2);
                auto rv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                auto want = run<BatchNormForward>(p, {x, scale, bias, rm, rv});
                // relu(bn + z), each sum rounded to float as the ADD would.
                std::vector<double> y = want[0].values();
                const std::vector<double> zv = z.values();
                size_t zeros = 0;
                for (size_t i = 0; i < y.size(); ++i) {
                    const float sum = static_cast<float>(y[i]) + static_cast<float>(zv[i]);
                    y[i] = sum > 0 ? sum : 0.0;
                    zeros += y[i] == 0;
                }
                // Both sides of the relu are exercised.
                EXPECT_GT(zeros, 0u);
                EXPECT_LT(zeros, y.size());
                auto got = run<BatchNormAddReluForwardBlocked>(
                        p, {block_ref(x, block), scale, bias, rm, rv, block_ref(z, block)});
                ASSERT_EQ(got.size(), 5u);
                EXPECT_TRUE(tensors_near(got[0], block_ref(from(shape, y), block), 1e-5));
                for (size_t i = 1; i < 5; ++i)
                    EXPECT_TRUE(tensors_near(got[i], want[i], 1e-5)) << "output " << i;

                // The gradients' sum, masked by the relu's output.
                auto dy = random_tensor(shape, rng), da = random_tensor(shape, rng);
                std::vector<double> masked = dy.values();
                const std::vector<double> dav = da.values();
                for (size_t i = 0; i < masked.size(); ++i) {
                    const float sum = static_cast<float>(masked[i]) + static_cast<float>(dav[i]);
                    masked[i] = y[i] > 0 ? sum : 0.0;
                }
                auto want_b = run<BatchNormBackward>(
                        p, {from(shape, masked), x, scale, want[1], want[2]});
                auto got_b = run<BatchNormAddReluBackwardBlocked>(
                        p, {block_ref(dy, block), block_ref(da, block), block_ref(x, block), scale,
                            want[1], want[2], block_ref(from(shape, y), block)});
                ASSERT_EQ(got_b.size(), 4u);
                EXPECT_TRUE(tensors_near(got_b[0], block_ref(want_b[0], block), 1e-5));
                EXPECT_TRUE(tensors_near(got_b[1], want_b[1], 1e-5));
                EXPECT_TRUE(tensors_near(got_b[2], want_b[2], 1e-5));
                EXPECT_TRUE(tensors_near(got_b[3], block_ref(from(shape, masked), block), 1e-6));
            }
}

TEST(BatchNormAddReluBlocked, BadInputsNameTheOperand) {
    auto h = Handle::make_naive();
    auto f32 = [](TensorShape s) { return TensorLayout(s, dtype::Float32); };
    const TensorLayout pc = f32({1, 20, 1, 1}), act = f32({2, 3, 4, 4, 8});
    auto expect_error = [](OperatorBase& op, std::vector<TensorLayout> in, size_t n_out,
                           const std::string& part, bool dtype_error) {
        std::vector<TensorLayout> out(n_out);
        try {
            op.deduce_layout(in, out);
            ADD_FAILURE() << "no error for " << part;
        } catch (const DTypeError& e) {
            EXPECT_TRUE(dtype_error) << e.what();
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        } catch (const ShapeError& e) {
            EXPECT_FALSE(dtype_error) << e.what();
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    auto fwd = h->create_operator<BatchNormAddReluForwardBlocked>();
    expect_error(*fwd, {act, pc, pc, pc, pc, f32({2, 3, 4, 5, 8})}, 5, "z", false);
    expect_error(*fwd, {act, pc, pc, pc, pc, TensorLayout({2, 3, 4, 4, 8}, dtype::Int32)}, 5, "z",
                 true);
    // 20 channels take 3 blocks of 8, not 2.
    expect_error(*fwd, {f32({2, 2, 4, 4, 8}), pc, pc, pc, pc, f32({2, 2, 4, 4, 8})}, 5,
                 "20 channels take 3", false);
    auto bwd = h->create_operator<BatchNormAddReluBackwardBlocked>();
    expect_error(*bwd, {act, f32({2, 3, 4, 5, 8}), act, pc, pc, pc, act}, 4, "diff_add", false);
    expect_error(*bwd, {act, act, act, pc, pc, pc, f32({2, 3, 4, 4, 16})}, 4, "relu_dst", false);
    expect_error(*bwd, {act, act, f32({2, 3, 4, 5, 8}), pc, pc, pc, act}, 4, "differ in shape",
                 false);
    // The layouts it gives: BatchNormBackwardBlocked's, and the masked sum of diff's shape.
    std::vector<TensorLayout> out(4);
    bwd->deduce_layout(std::vector<TensorLayout>{act, act, act, pc, pc, pc, act}, out);
    EXPECT_TRUE(out[0].eq_shape(act));
    EXPECT_TRUE(out[1].eq_shape(pc));
    EXPECT_TRUE(out[3].eq_shape(act));
}
