// DropoutForward/Backward on the naive backend.
#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/norm.h"
#include "src/common/philox.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Dropout dropout(float p, uint64_t seed) {
    param::Dropout d;
    d.drop_prob = p;
    d.seed = seed;
    return d;
}

std::vector<HostTensor> forward(const param::Dropout& p, const HostTensor& x) {
    auto op = make_op<DropoutForward>(p);
    return run_op(*op, {x});
}

HostTensor backward(const param::Dropout& p, const HostTensor& dy, const HostTensor& mask) {
    auto op = make_op<DropoutBackward>(p);
    return std::move(run_op(*op, {dy, mask})[0]);
}

}  // namespace

TEST(DropoutForward, MaskFollowsThePhiloxStream) {
    // Seed 0: element i is kept iff the top 24 bits of word i of the zero block, over 2^24, are
    // at least 0.5, i.e. iff the word's top bit is set.
    auto x = HostTensor::from({4}, {1, 2, 3, 4});
    auto out = forward(dropout(0.5f, 0), x);
    // 0x6627e8d5 0xe169c58d 0xbc57ac4c 0x9b00dbd8
    EXPECT_EQ(out[1].values(), (std::vector<double>{0, 1, 1, 1}));
    EXPECT_EQ(out[0].values(), (std::vector<double>{0, 4, 6, 8}));
}

TEST(DropoutForward, KeepsTheExpectedShareAndScales) {
    auto x = random_tensor({100000}, 1, 0.5, 1.5);
    for (float p : {0.1f, 0.5f, 0.9f}) {
        auto out = forward(dropout(p, 42), x);
        auto xv = x.values(), y = out[0].values(), m = out[1].values();
        double kept = 0;
        for (size_t i = 0; i < xv.size(); ++i) {
            kept += m[i];
            ASSERT_NEAR(y[i], m[i] ? xv[i] / (1 - p) : 0.0, 1e-5 * y[i] + 1e-6) << i;
        }
        // The binomial's standard deviation is at most 158 elements here.
        EXPECT_NEAR(kept, (1 - p) * 1e5, 800) << p;
    }
}

TEST(DropoutForward, ExtremeProbabilities) {
    auto x = random_tensor({3, 7}, 2);
    auto none = forward(dropout(0, 3), x);
    EXPECT_TRUE(tensors_near(none[0], x, 0));
    EXPECT_EQ(none[1].values(), std::vector<double>(21, 1));
    auto all = forward(dropout(1, 3), x);
    EXPECT_EQ(all[0].values(), std::vector<double>(21, 0));
    EXPECT_EQ(all[1].values(), std::vector<double>(21, 0));
    EXPECT_EQ(backward(dropout(1, 3), x, all[1]).values(), std::vector<double>(21, 0));
}

TEST(DropoutForward, SeedsDecideTheMask) {
    auto x = random_tensor({1000}, 4);
    auto a = forward(dropout(0.5f, 1), x)[1].values();
    EXPECT_EQ(a, forward(dropout(0.5f, 1), x)[1].values());
    EXPECT_NE(a, forward(dropout(0.5f, 2), x)[1].values());
    // The mask depends on the logical index only, not on src's shape or strides.
    auto reshaped = forward(dropout(0.5f, 1), HostTensor::from({10, 100}, x.values()))[1].values();
    EXPECT_EQ(a, reshaped);
}

TEST(DropoutBackward, MatchesFiniteDifferences) {
    auto p = dropout(0.3f, 5);
    auto x = random_tensor({4, 9}, 6);
    auto dy = random_tensor({4, 9}, 7);
    auto mask = forward(p, x)[1];
    auto f = [&](const std::vector<HostTensor>& in) { return forward(p, in[0])[0]; };
    EXPECT_TRUE(tensors_near(backward(p, dy, mask), numeric_grad(f, {x}, 0, dy), 1e-3));
}

TEST(DropoutForward, StridedAndBroadcastInputs) {
    Checker<DropoutForward> c(naive_handle());
    c.set_param(dropout(0.4f, 8));
    c.set_noncontiguous(true).execs({{5, 7}});
    c.set_noncontiguous(false)
            .exec_layouts({TensorLayout({7, 5}, dtype::Float32).dimshuffle({1, 0})})
            .exec_layouts({TensorLayout({5, 7}, {0, -1}, dtype::Float32)});
    Checker<DropoutBackward> b(naive_handle());
    b.set_param(dropout(0.4f, 8)).set_dtype(1, dtype::Uint8).set_range(1, 0, 2);
    b.set_noncontiguous(true).execs({{5, 7}, {5, 7}});
    b.set_noncontiguous(false).exec_layouts(
            {TensorLayout({7, 5}, dtype::Float32).dimshuffle({1, 0}),
             TensorLayout({5, 7}, {0, 1}, dtype::Uint8)});
}

TEST(DropoutForward, EdgeShapesAndDtypes) {
    for (TensorShape s : {TensorShape{0}, TensorShape{3, 0}, TensorShape{1}, TensorShape{13, 7},
                          TensorShape{64, 1031}}) {
        auto out = forward(dropout(0.5f, 9), random_tensor(s, 10));
        EXPECT_TRUE(out[0].shape().eq_shape(s));
        EXPECT_EQ(out[1].dtype(), dtype::Uint8);
    }
    auto x32 = random_tensor({8, 16}, 11);
    auto want = forward(dropout(0.25f, 12), x32);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = as_dtype(x32, dt);
        auto got = forward(dropout(0.25f, 12), x);
        EXPECT_EQ(got[0].dtype(), dt);
        EXPECT_TRUE(tensors_near(got[1], want[1], 0)) << dt.name();
        auto ref = forward(dropout(0.25f, 12), as_dtype(x, dtype::Float32))[0];
        EXPECT_TRUE(tensors_near(got[0], as_dtype(ref, dt), default_epsilon(dt))) << dt.name();
        auto g = backward(dropout(0.25f, 12), x, got[1]);
        EXPECT_TRUE(tensors_near(g, got[0], default_epsilon(dt))) << dt.name();
    }
}

TEST(DropoutForward, BadInputsNameOpAndShapes) {
    TensorLayout x({2, 3}, dtype::Float32);
    expect_error<ParamError>([&] { deduce<DropoutForward>(dropout(1.5f, 0), {x}); },
                             {"DropoutForward(drop_prob=1.5, seed=0)", "drop_prob 1.5"});
    expect_error<ParamError>([&] { deduce<DropoutForward>(dropout(NAN, 0), {x}); },
                             {"DropoutForward(", "drop_prob nan"});
    expect_error<DTypeError>(
            [&] {
                deduce<DropoutForward>(dropout(0.5f, 0), {TensorLayout({2, 3}, dtype::Int32)});
            },
            {"DropoutForward(", "{2(3),3(1)} int32"});
    expect_error<DTypeError>(
            [&] {
                deduce<DropoutBackward>(dropout(0.5f, 0), {x, x});
            },
            {"DropoutBackward(", "mask {2(3),3(1)} float32", "uint8"});
    expect_error<ShapeError>(
            [&] {
                deduce<DropoutBackward>(dropout(0.5f, 0), {x, TensorLayout({3, 2}, dtype::Uint8)});
            },
            {"DropoutBackward(", "{2(3),3(1)}", "{3(2),2(1)} uint8"});
}

TEST(DropoutForward, BothOpsWriteIntoPaddedOutputs) {
    auto x = random_tensor({5, 7}, 20);
    expect_padded_outputs_match<DropoutForward>(dropout(0.5f, 21), {x});
    auto mask = forward(dropout(0.5f, 21), x)[1];
    expect_padded_outputs_match<DropoutBackward>(dropout(0.5f, 21), {x, mask});
}

TEST(DropoutForward, LowPrecisionStridedInputs) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        Checker<DropoutForward>(naive_handle())
                .set_param(dropout(0.3f, 22))
                .set_dtype(0, dt)
                .set_noncontiguous(true)
                .execs({{6, 11}});
    }
}
