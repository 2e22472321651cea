// BatchNormForward (training and inference) and BatchNormBackward on the x86 handle (Highway
// loops for contiguous tensors, oneDNN for strided ones) against naive: 2-D to 5-D src, channels
// and per-channel counts of 1 and primes, both per-channel shapes ({C} and {1, C, 1, ...}), eps and
// momentum, padded inputs and outputs, running statistics updated in place (outputs aliasing
// inputs), and the cases that go to naive.
#include "neomeg/dnn/operators/norm.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::BatchNorm::FwdMode;

param::BatchNorm bn(Mode mode, float eps = 1e-5f, float momentum = 0.9f) {
    param::BatchNorm p;
    p.fwd_mode = mode;
    p.epsilon = eps;
    p.momentum = momentum;
    return p;
}

const std::vector<TensorShape> kSrcShapes = {{2, 3},          {1, 4},         {7, 1},
                                             {3, 2, 9},       {4, 5, 7, 7},   {1, 3, 5, 5},
                                             {2, 3, 4, 5, 6}, {64, 6, 12, 12}};

// {C} and the same channels as {1, C, 1, ...}.
std::vector<TensorShape> per_channel_shapes(const TensorShape& src) {
    TensorShape wide = src;
    for (size_t i = 0; i < wide.ndim; ++i)
        if (i != 1)
            wide[i] = 1;
    return {TensorShape{src[1]}, wide};
}

const param::BatchNorm kParams[] = {bn(Mode::TRAINING), bn(Mode::INFERENCE),
                                    bn(Mode::TRAINING, 1e-3f, 0.5f),
                                    bn(Mode::INFERENCE, 0.1f, 0.99f)};

}  // namespace

TEST_F(X86, BatchNormForwardMatchesNaive) {
    for (const auto& p : kParams)
        for (const TensorShape& s : kSrcShapes)
            for (const TensorShape& pc : per_channel_shapes(s)) {
                Checker<BatchNormForward> c(handle.get());
                c.set_param(p).set_range(0, -2, 3).set_range(4, 0.5, 2);
                c.execs({s, pc, pc, pc, pc});
                c.set_noncontiguous(true).execs({s, pc, pc, pc, pc});
            }
}

TEST_F(X86, BatchNormBackwardMatchesNaive) {
    for (const auto& p : kParams)
        for (const TensorShape& s : kSrcShapes)
            for (const TensorShape& pc : per_channel_shapes(s)) {
                Checker<BatchNormBackward> c(handle.get());
                // saved_inv_std is positive, as the forward saves it.
                c.set_param(p).set_range(1, -2, 3).set_range(4, 0.5, 2);
                c.execs({s, s, pc, pc, pc});
                c.set_noncontiguous(true).execs({s, s, pc, pc, pc});
            }
}

// The Highway loops' four accumulators a channel (batch_norm_hwy.cpp) at each Highway target:
// one value per channel, rows shorter than a vector, of exactly four vectors of double at
// AVX-512 (32) and with groups of four, single vectors and a tail (37, 100).
TEST_F(X86, BatchNormAtEachHighwayTarget) {
#ifdef NEOMEG_WITH_DNNL
    const std::vector<TensorShape> shapes = {
            {1, 4}, {1, 5, 1, 1}, {3, 2, 32}, {3, 2, 37}, {2, 3, 10, 10}};
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (const auto& p : {bn(Mode::TRAINING), bn(Mode::INFERENCE)})
            for (const TensorShape& s : shapes) {
                TensorShape pc{s[1]};
                Checker<BatchNormForward> f(handle.get());
                f.set_param(p).set_range(0, -2, 3).set_range(4, 0.5, 2);
                f.execs({s, pc, pc, pc, pc});
                Checker<BatchNormBackward> b(handle.get());
                b.set_param(p).set_range(1, -2, 3).set_range(4, 0.5, 2);
                b.execs({s, s, pc, pc, pc});
            }
    });
    EXPECT_GE(ran, 1u);
#endif
}

TEST_F(X86, BatchNormBroadcastScale) {
    Checker<BatchNormForward> c(handle.get());
    c.set_param(bn(Mode::TRAINING)).set_range(4, 0.5, 2);
    TensorLayout pc({4}, dtype::Float32), bcast({4}, {0}, dtype::Float32);
    c.exec_layouts({TensorLayout({3, 4, 5, 5}, dtype::Float32), bcast, pc, pc, pc});
    Checker<BatchNormBackward> b(handle.get());
    b.set_param(bn(Mode::TRAINING)).set_range(4, 0.5, 2);
    TensorLayout src({3, 4, 5, 5}, dtype::Float32);
    b.exec_layouts({TensorLayout({3, 4, 5, 5}, {0, 25, 5, 1}, dtype::Float32), src, bcast, pc, pc});
}

// The eager runtime updates the running statistics in place: running_mean_out and
// running_var_out are the running_mean and running_var tensors themselves.
TEST_F(X86, BatchNormRunningStatisticsInPlace) {
    std::mt19937 rng(7);
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
        HostTensor x({8, 3, 6, 6}, dtype::Float32), scale({3}, dtype::Float32),
                bias({3}, dtype::Float32), rm({3}, dtype::Float32), rv({3}, dtype::Float32);
        fill_uniform(x, -2, 3, rng);
        fill_uniform(scale, 0.5, 1.5, rng);
        fill_uniform(bias, -1, 1, rng);
        fill_uniform(rm, -1, 1, rng);
        fill_uniform(rv, 0.5, 2, rng);
        auto naive = Handle::make_naive()->create_operator<BatchNormForward>();
        naive->param() = bn(mode);
        auto want = run_op(*naive, {x, scale, bias, rm.contiguous(), rv.contiguous()});

        auto op = handle->create_operator<BatchNormForward>();
        op->param() = bn(mode);
        HostTensor dst(x.layout()), mean({3}, dtype::Float32), inv({3}, dtype::Float32);
        std::vector<TensorND> in{x.nd(), scale.nd(), bias.nd(), rm.nd(), rv.nd()};
        std::vector<TensorND> out{dst.nd(), mean.nd(), inv.nd(), rm.nd(), rv.nd()};
        std::vector<TensorLayout> il, ol;
        for (auto& t : in)
            il.push_back(t.layout);
        for (auto& t : out)
            ol.push_back(t.layout);
        std::vector<std::byte> ws(op->get_workspace_in_bytes(il, ol));
        op->exec(in, out, {ws.data(), ws.size()});
        EXPECT_EQ(last_kernel(*op), "hwy");
        EXPECT_TRUE(tensors_near(dst, want[0], 1e-4));
        EXPECT_TRUE(tensors_near(mean, want[1], 1e-4));
        EXPECT_TRUE(tensors_near(inv, want[2], 1e-4));
        EXPECT_TRUE(tensors_near(rm, want[3], 1e-4));
        EXPECT_TRUE(tensors_near(rv, want[4], 1e-4));
    }
}

// Contiguous tensors run the Highway loops, strided ones oneDNN; both against naive.
TEST_F(X86, BatchNormRunsHighwayOrOneDnn) {
    std::mt19937 rng(3);
    HostTensor x({16, 6, 12, 12}, dtype::Float32), dy({16, 6, 12, 12}, dtype::Float32);
    HostTensor c1({6}, dtype::Float32), c2({6}, dtype::Float32), c3({6}, dtype::Float32),
            c4({6}, dtype::Float32);
    for (HostTensor* t : {&x, &dy, &c1, &c2, &c3})
        fill_uniform(*t, -1, 1, rng);
    fill_uniform(c4, 0.5, 2, rng);
    HostTensor xs(padded_layout(x.layout())), dys(padded_layout(dy.layout()));
    xs.set_values(x.values());
    dys.set_values(dy.values());
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
        EXPECT_EQ(run_and_compare<BatchNormForward>(*handle, bn(mode), {x, c1, c2, c3, c4}), "hwy");
        EXPECT_EQ(run_and_compare<BatchNormBackward>(*handle, bn(mode), {dy, x, c1, c2, c4}),
                  "hwy");
        EXPECT_TRUE(run_and_compare<BatchNormForward>(*handle, bn(mode), {xs, c1, c2, c3, c4})
                            .starts_with("onednn:"));
        EXPECT_TRUE(run_and_compare<BatchNormBackward>(*handle, bn(mode), {dys, xs, c1, c2, c4})
                            .starts_with("onednn:"));
    }
}

TEST_F(X86, BatchNormOtherDtypesRunNaive) {
    // float16 statistics (float16 src with float32 ones runs Highway: batch_norm_lowp.cpp).
    Checker<BatchNormForward> c(handle.get());
    c.set_param(bn(Mode::TRAINING)).set_range(4, 0.5, 2);
    for (size_t i = 0; i < 5; ++i)
        c.set_dtype(i, dtype::Float16);
    c.execs({{4, 3, 5, 5}, {3}, {3}, {3}, {3}});
    HostTensor x({4, 3, 5, 5}, dtype::Float16), pc({3}, dtype::Float16);
    fill_uniform(pc, 0.5, 1, *std::make_unique<std::mt19937>(1));
    std::mt19937 rng(4);
    fill_uniform(x, -1, 1, rng);
    EXPECT_EQ(run_and_compare<BatchNormForward>(*handle, bn(Mode::TRAINING), {x, pc, pc, pc, pc},
                                                {}, 1e-2),
              "naive");
}
