// BatchNormForward/Backward on the naive backend.
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/norm.h"

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

std::vector<HostTensor> forward(const param::BatchNorm& p, const std::vector<HostTensor>& in) {
    auto op = make_op<BatchNormForward>(p);
    return run_op(*op, in);
}

std::vector<HostTensor> backward(const param::BatchNorm& p, const HostTensor& dy,
                                 const std::vector<HostTensor>& in,
                                 const std::vector<HostTensor>& fwd) {
    auto op = make_op<BatchNormBackward>(p);
    return run_op(*op, {dy, in[0], in[1], fwd[1], fwd[2]});
}

// src, scale, bias, running mean, running var (positive) for channels on axis 1.
std::vector<HostTensor> random_inputs(const TensorShape& src, const TensorShape& per_channel,
                                      uint32_t seed, DType stat = dtype::Float32) {
    return {random_tensor(src, seed, -2, 3),
            as_dtype(random_tensor(per_channel, seed + 1, 0.5, 1.5), stat),
            as_dtype(random_tensor(per_channel, seed + 2), stat),
            as_dtype(random_tensor(per_channel, seed + 3), stat),
            as_dtype(random_tensor(per_channel, seed + 4, 0.5, 2), stat)};
}

// Explicit (n, c, s) loops, one pass of sums and sums of squares per channel.
struct Reference {
    HostTensor dst;
    std::vector<double> mean, inv_std, running_mean, running_var;
};
Reference reference(const param::BatchNorm& p, const std::vector<HostTensor>& in) {
    const TensorShape& sh = in[0].shape();
    size_t n = sh[0], c = sh[1], s = 1;
    for (size_t i = 2; i < sh.ndim; ++i)
        s *= sh[i];
    auto x = in[0].values(), sc = in[1].values(), bi = in[2].values();
    auto rm = in[3].values(), rv = in[4].values();
    std::vector<double> y(x.size());
    Reference r{HostTensor(), {}, {}, rm, rv};
    bool training = p.fwd_mode == Mode::TRAINING;
    for (size_t ci = 0; ci < c; ++ci) {
        double sum = 0, sum2 = 0, m = double(n * s);
        for (size_t ni = 0; ni < n; ++ni)
            for (size_t si = 0; si < s; ++si) {
                double v = x[(ni * c + ci) * s + si];
                sum += v;
                sum2 += v * v;
            }
        double mean = training ? sum / m : rm[ci];
        double var = training ? sum2 / m - mean * mean : rv[ci];
        double inv = 1 / std::sqrt(var + p.epsilon);
        for (size_t ni = 0; ni < n; ++ni)
            for (size_t si = 0; si < s; ++si) {
                size_t i = (ni * c + ci) * s + si;
                y[i] = (x[i] - mean) * inv * sc[ci] + bi[ci];
            }
        r.mean.push_back(mean);
        r.inv_std.push_back(inv);
        if (training) {
            r.running_mean[ci] = rm[ci] * p.momentum + mean * (1 - p.momentum);
            r.running_var[ci] = rv[ci] * p.momentum + var * m / (m - 1) * (1 - p.momentum);
        }
    }
    r.dst = HostTensor::from(sh, y);
    return r;
}

void expect_values_near(const HostTensor& t, const std::vector<double>& want, double eps,
                        const std::string& what) {
    auto v = t.values();
    ASSERT_EQ(v.size(), want.size()) << what;
    for (size_t i = 0; i < v.size(); ++i)
        EXPECT_NEAR(v[i], want[i], eps * std::max(1.0, std::abs(want[i]))) << what << " " << i;
}

}  // namespace

TEST(BatchNormForward, HandComputedTraining) {
    // Channel 0 holds {1, 3} (mean 2, variance 1, unbiased 2); channel 1 {10, 14} (12, 4, 8).
    auto x = HostTensor::from({2, 2}, {1, 10, 3, 14});
    auto out = forward(bn(Mode::TRAINING, 0),
                       {x, HostTensor::from({2}, {1, 2}), HostTensor::from({2}, {0, 1}),
                        HostTensor::from({2}, {0, 1}), HostTensor::from({2}, {1, 1})});
    EXPECT_TRUE(tensors_near(out[0], HostTensor::from({2, 2}, {-1, -1, 1, 3}), 1e-6));
    EXPECT_TRUE(tensors_near(out[1], HostTensor::from({2}, {2, 12}), 1e-6));
    EXPECT_TRUE(tensors_near(out[2], HostTensor::from({2}, {1, 0.5}), 1e-6));
    // MegEngine: running = running * 0.9 + batch * 0.1, with the unbiased variance.
    EXPECT_TRUE(tensors_near(out[3], HostTensor::from({2}, {0.2, 2.1}), 1e-6));
    EXPECT_TRUE(tensors_near(out[4], HostTensor::from({2}, {1.1, 1.7}), 1e-6));
}

TEST(BatchNormForward, HandComputedInference) {
    auto x = HostTensor::from({2, 2}, {1, 10, 3, 14});
    auto rm = HostTensor::from({2}, {1, 2}), rv = HostTensor::from({2}, {3, 15});
    auto out = forward(bn(Mode::INFERENCE, 1),
                       {x, HostTensor::from({2}, {1, 2}), HostTensor::from({2}, {0, 1}), rm, rv});
    // inv_std = {1/2, 1/4}
    EXPECT_TRUE(tensors_near(out[0], HostTensor::from({2, 2}, {0, 5, 1, 7}), 1e-6));
    EXPECT_TRUE(tensors_near(out[1], rm, 0));
    EXPECT_TRUE(tensors_near(out[2], HostTensor::from({2}, {0.5, 0.25}), 1e-6));
    EXPECT_TRUE(tensors_near(out[3], rm, 0));
    EXPECT_TRUE(tensors_near(out[4], rv, 0));
}

TEST(BatchNormForward, MatchesLoopReference) {
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
        for (TensorShape s : {TensorShape{5, 3}, TensorShape{2, 3, 7}, TensorShape{2, 3, 4, 5},
                              TensorShape{2, 3, 2, 2, 3}}) {
            for (bool keepdim : {false, true}) {
                TensorShape pc{s[1]};
                if (keepdim) {
                    pc.ndim = s.ndim;
                    for (size_t i = 0; i < s.ndim; ++i)
                        pc[i] = i == 1 ? s[1] : 1;
                }
                auto p = bn(mode, 1e-3f, 0.8f);
                auto in = random_inputs(s, pc, 7);
                auto out = forward(p, in);
                auto ref = reference(p, in);
                std::string what = s.to_string() + (keepdim ? " 1C11" : " C");
                EXPECT_TRUE(tensors_near(out[0], ref.dst, 1e-5)) << what;
                EXPECT_TRUE(out[1].shape().eq_shape(pc)) << what;
                expect_values_near(out[1], ref.mean, 1e-5, what + " mean");
                expect_values_near(out[2], ref.inv_std, 1e-5, what + " inv_std");
                expect_values_near(out[3], ref.running_mean, 1e-5, what + " running_mean");
                expect_values_near(out[4], ref.running_var, 1e-5, what + " running_var");
            }
        }
}

TEST(BatchNormForward, UpdatesRunningStatisticsInPlace) {
    auto in = random_inputs({4, 3, 5}, {3}, 9);
    auto want = reference(bn(Mode::TRAINING), in);
    auto op = make_op<BatchNormForward>(bn(Mode::TRAINING));
    HostTensor dst({4, 3, 5}, dtype::Float32), mean({3}, dtype::Float32), inv({3}, dtype::Float32);
    std::vector<TensorND> ins{in[0].nd(), in[1].nd(), in[2].nd(), in[3].nd(), in[4].nd()};
    // The running outputs are the running inputs' own memory.
    std::vector<TensorND> outs{dst.nd(), mean.nd(), inv.nd(), in[3].nd(), in[4].nd()};
    op->exec(ins, outs);
    expect_values_near(in[3], want.running_mean, 1e-6, "running_mean");
    expect_values_near(in[4], want.running_var, 1e-6, "running_var");
    EXPECT_TRUE(tensors_near(dst, want.dst, 1e-5));
}

TEST(BatchNormBackward, MatchesFiniteDifferences) {
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
        for (TensorShape s : {TensorShape{6, 3}, TensorShape{2, 3, 2, 3}}) {
            auto p = bn(mode);
            auto in = random_inputs(s, {3}, 11);
            auto dy = random_tensor(s, 12);
            auto grads = backward(p, dy, in, forward(p, in));
            auto f = [&](const std::vector<HostTensor>& x) { return forward(p, x)[0]; };
            for (size_t k = 0; k < 3; ++k)
                EXPECT_TRUE(tensors_near(grads[k], numeric_grad(f, in, k, dy), 5e-3))
                        << "input " << k << " mode " << to_string(mode) << " " << s.to_string();
        }
}

TEST(BatchNormForward, StridedAndBroadcastInputs) {
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
        Checker<BatchNormForward> c(naive_handle());
        c.set_param(bn(mode)).set_range(4, 0.5, 2);
        c.set_noncontiguous(true).execs(
                {{3, 4, 5, 2}, {1, 4, 1, 1}, {1, 4, 1, 1}, {1, 4, 1, 1}, {1, 4, 1, 1}});
        TensorLayout pc({4}, dtype::Float32);
        c.set_noncontiguous(false).exec_layouts(
                {TensorLayout({5, 4, 3}, dtype::Float32).dimshuffle({2, 1, 0}),
                 TensorLayout({4}, {-1}, dtype::Float32), TensorLayout({4}, {0}, dtype::Float32),
                 pc, TensorLayout({4}, {2}, dtype::Float32)});
        c.exec_layouts({TensorLayout({3, 4, 5}, {0, 5, 1}, dtype::Float32), pc, pc, pc, pc});

        Checker<BatchNormBackward> b(naive_handle());
        b.set_param(bn(mode)).set_range(4, 0.5, 2);
        b.set_noncontiguous(true).execs({{3, 4, 5}, {3, 4, 5}, {4}, {4}, {4}});
        b.set_noncontiguous(false).exec_layouts(
                {TensorLayout({5, 4, 3}, dtype::Float32).dimshuffle({2, 1, 0}),
                 TensorLayout({3, 4, 5}, {20, 0, 1}, dtype::Float32),
                 TensorLayout({4}, {-1}, dtype::Float32), pc,
                 TensorLayout({4}, {0}, dtype::Float32)});
    }
}

TEST(BatchNormForward, EdgeShapes) {
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
        for (TensorShape s :
             {TensorShape{0, 3}, TensorShape{2, 0, 4}, TensorShape{3, 2, 0}, TensorShape{2, 1},
              TensorShape{7, 13}, TensorShape{2, 3, 5, 7}, TensorShape{16, 32, 16, 16}}) {
            auto p = bn(mode);
            auto in = random_inputs(s, {s[1]}, 13);
            auto out = forward(p, in);
            EXPECT_TRUE(out[0].shape().eq_shape(s));
            if (s.total_nr_elems()) {
                EXPECT_TRUE(tensors_near(out[0], reference(p, in).dst, 1e-4)) << s.to_string();
            } else {
                // No values: the running statistics stay as they were.
                EXPECT_TRUE(tensors_near(out[3], in[3], 0)) << s.to_string();
                EXPECT_TRUE(tensors_near(out[4], in[4], 0)) << s.to_string();
            }
            auto g = backward(p, random_tensor(s, 14), in, out);
            EXPECT_TRUE(g[0].shape().eq_shape(s));
            EXPECT_TRUE(g[1].shape().eq_shape({s[1]}));
        }
    // One value per channel, as MegEngine 1.13 trains it (its values for x = {3, 4, 5, 6}, scale
    // 2, bias 0.5, running mean 0, running variance 1): the output is the bias, the running mean
    // moves to 0.1 x, the running variance takes the unbiased variance 0 / 0 and is NaN; the
    // gradients are 0 for x and scale, the sum of dy for the bias.
    std::vector<HostTensor> one{
            HostTensor::from({1, 4, 1, 1}, {3, 4, 5, 6}), HostTensor::from({4}, {2, 2, 2, 2}),
            HostTensor::from({4}, {0.5, 0.5, 0.5, 0.5}), HostTensor::from({4}, {0, 0, 0, 0}),
            HostTensor::from({4}, {1, 1, 1, 1})};
    auto out = forward(bn(Mode::TRAINING), one);
    EXPECT_TRUE(tensors_near(out[0], HostTensor::from({1, 4, 1, 1}, {0.5, 0.5, 0.5, 0.5}), 0));
    EXPECT_TRUE(tensors_near(out[3], HostTensor::from({4}, {0.3, 0.4, 0.5, 0.6}), 1e-6));
    for (double v : out[4].values())
        EXPECT_TRUE(std::isnan(v));
    auto g =
            backward(bn(Mode::TRAINING), HostTensor::from({1, 4, 1, 1}, {1, -2, 3, 0.5}), one, out);
    EXPECT_TRUE(tensors_near(g[0], HostTensor::from({1, 4, 1, 1}, {0, 0, 0, 0}), 0));
    EXPECT_TRUE(tensors_near(g[1], HostTensor::from({4}, {0, 0, 0, 0}), 0));
    EXPECT_TRUE(tensors_near(g[2], HostTensor::from({4}, {1, -2, 3, 0.5}), 0));
    auto in = random_inputs({1, 3}, {3}, 15);
    EXPECT_TRUE(tensors_near(forward(bn(Mode::INFERENCE), in)[0],
                             reference(bn(Mode::INFERENCE), in).dst, 1e-5));
}

TEST(BatchNormForward, LowPrecisionDtypes) {
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (DType stat : {dtype::Float32, dt}) {
            auto in32 = random_inputs({4, 3, 5}, {3}, 17);
            std::vector<HostTensor> low{as_dtype(in32[0], dt)},
                    ref{as_dtype(low[0], dtype::Float32)};
            for (size_t i = 1; i < 5; ++i) {
                low.push_back(as_dtype(in32[i], stat));
                ref.push_back(as_dtype(low.back(), dtype::Float32));
            }
            auto p = bn(Mode::TRAINING);
            auto got = forward(p, low), want = forward(p, ref);
            EXPECT_EQ(got[0].dtype(), dt);
            EXPECT_EQ(got[1].dtype(), stat);
            std::string what = std::string(dt.name()) + " stats " + stat.name();
            EXPECT_TRUE(tensors_near(got[0], as_dtype(want[0], dt), 2 * default_epsilon(dt)))
                    << what;
            for (size_t i = 1; i < 5; ++i)
                EXPECT_TRUE(tensors_near(got[i], as_dtype(want[i], stat), default_epsilon(stat)))
                        << what << " output " << i;
            auto dy = as_dtype(random_tensor({4, 3, 5}, 18), dt);
            auto g = backward(p, dy, low, got);
            auto g32 = backward(
                    p, as_dtype(dy, dtype::Float32), ref,
                    {want[0], as_dtype(got[1], dtype::Float32), as_dtype(got[2], dtype::Float32)});
            EXPECT_TRUE(tensors_near(g[0], as_dtype(g32[0], dt), 4 * default_epsilon(dt))) << what;
            for (size_t i = 1; i < 3; ++i)
                EXPECT_TRUE(tensors_near(g[i], as_dtype(g32[i], stat), 4 * default_epsilon(stat)))
                        << what << " grad " << i;
        }
}

TEST(BatchNormForward, BadInputsNameOpAndShapes) {
    TensorLayout x({2, 3, 4}, dtype::Float32), pc({3}, dtype::Float32);
    auto p = bn(Mode::TRAINING);
    expect_error<ShapeError>(
            [&] {
                deduce<BatchNormForward>(p, {x, TensorLayout({4}, dtype::Float32), pc, pc, pc});
            },
            {"BatchNormForward(fwd_mode=TRAINING, epsilon=1e-05, momentum=0.9)", "scale {4(1)}",
             "{2(12),3(4),4(1)}"});
    expect_error<ShapeError>(
            [&] {
                deduce<BatchNormForward>(p,
                                         {x, pc, pc, TensorLayout({1, 3, 1}, dtype::Float32), pc});
            },
            {"BatchNormForward(", "running_mean {1(3),3(1),1(1)}", "scale {3(1)}"});
    expect_error<DTypeError>(
            [&] {
                deduce<BatchNormForward>(p, {x, pc, pc, pc, TensorLayout({3}, dtype::Int32)});
            },
            {"BatchNormForward(", "running_var {3(1)} int32"});
    expect_error<DTypeError>(
            [&] {
                TensorLayout h({3}, dtype::Float16);
                deduce<BatchNormForward>(p, {x, h, h, h, h});
            },
            {"BatchNormForward(", "scale {3(1)} float16", "neither float32 nor src's dtype"});
    expect_error<DTypeError>(
            [&] {
                deduce<BatchNormForward>(p, {TensorLayout({2, 3}, dtype::Int8), pc, pc, pc, pc});
            },
            {"BatchNormForward(", "src {2(3),3(1)} int8"});
    expect_error<ShapeError>(
            [&] {
                deduce<BatchNormForward>(p, {TensorLayout({3}, dtype::Float32), pc, pc, pc, pc});
            },
            {"BatchNormForward(", "src {3(1)}", "at least 2 axes"});
    expect_error<ParamError>(
            [&] {
                deduce<BatchNormForward>(bn(Mode::TRAINING, 1e-5f, 1.5f), {x, pc, pc, pc, pc});
            },
            {"BatchNormForward(", "momentum 1.5"});
    expect_error<ShapeError>(
            [&] {
                deduce<BatchNormBackward>(p,
                                          {TensorLayout({2, 3, 5}, dtype::Float32), x, pc, pc, pc});
            },
            {"BatchNormBackward(", "diff {2(15),3(5),5(1)}", "src {2(12),3(4),4(1)}"});
}

TEST(BatchNormForward, BothOpsWriteIntoPaddedOutputs) {
    for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
        auto in = random_inputs({3, 4, 5}, {1, 4, 1}, 60);
        expect_padded_outputs_match<BatchNormForward>(bn(mode), in);
        auto fwd = forward(bn(mode), in);
        expect_padded_outputs_match<BatchNormBackward>(
                bn(mode), {random_tensor({3, 4, 5}, 61), in[0], in[1], fwd[1], fwd[2]});
    }
}

TEST(BatchNormForward, LowPrecisionStridedInputs) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        Checker<BatchNormForward>(naive_handle())
                .set_param(bn(Mode::TRAINING))
                .set_dtype(0, dt)
                .set_range(4, 0.5, 2)
                .set_noncontiguous(true)
                .execs({{4, 3, 5}, {3}, {3}, {3}, {3}});
    }
}
