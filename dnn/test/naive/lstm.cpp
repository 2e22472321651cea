// LSTMForward/Backward on the naive backend: known values, a second formulation of the recurrence
// (one product of the concatenated [x, h] with [W_ih | W_hh] per step, in this file), reverse as
// the forward of the time-reversed sequence, the backward against central differences of the
// forward, strided tensors, an empty sequence and bad input.
#include <algorithm>
#include <cmath>

#include "common/lstm_shapes.h"
#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/rnn.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Dims = LstmDims;

std::vector<HostTensor> random_inputs(const Dims& z, bool bias, uint32_t seed) {
    std::vector<HostTensor> in;
    uint32_t k = 0;
    for (const TensorShape& s : lstm_forward_shapes(z, bias))
        in.push_back(random_tensor(s, seed + k++, -1, 1));
    return in;
}

std::vector<HostTensor> forward(const param::LSTM& p, const std::vector<HostTensor>& in) {
    auto op = make_op<LSTMForward>(p);
    return run_op(*op, in);
}

double sigm(double a) {
    return 1 / (1 + std::exp(-a));
}

// y, hn, cn by the concatenated formulation: a = [x, h] [W_ih | W_hh]^T + bias.
std::vector<HostTensor> reference(const param::LSTM& p, const std::vector<HostTensor>& in) {
    const TensorShape& xs = in[0].shape();
    size_t t_len = xs[0], batch = xs[1], isz = xs[2], hs = in[1].shape()[1], cols = isz + hs;
    auto x = in[0].values(), h = in[1].values(), c = in[2].values(), wi = in[3].values(),
         wh = in[4].values();
    std::vector<double> w(4 * hs * cols), y(t_len * batch * hs);
    for (size_t r = 0; r < 4 * hs; ++r) {
        std::copy_n(wi.begin() + r * isz, isz, w.begin() + r * cols);
        std::copy_n(wh.begin() + r * hs, hs, w.begin() + r * cols + isz);
    }
    for (size_t s = 0; s < t_len; ++s) {
        size_t t = p.reverse ? t_len - 1 - s : s;
        std::vector<double> h_new(batch * hs);
        for (size_t b = 0; b < batch; ++b) {
            std::vector<double> xh(x.begin() + (t * batch + b) * isz,
                                   x.begin() + (t * batch + b + 1) * isz);
            xh.insert(xh.end(), h.begin() + b * hs, h.begin() + (b + 1) * hs);
            std::vector<double> a(4 * hs, 0.0);
            for (size_t r = 0; r < 4 * hs; ++r) {
                for (size_t k = 0; k < cols; ++k)
                    a[r] += w[r * cols + k] * xh[k];
                if (p.bias)
                    a[r] += in[5].values()[r];
            }
            for (size_t j = 0; j < hs; ++j) {
                double& cj = c[b * hs + j];
                cj = sigm(a[hs + j]) * cj + sigm(a[j]) * std::tanh(a[2 * hs + j]);
                h_new[b * hs + j] = sigm(a[3 * hs + j]) * std::tanh(cj);
                y[(t * batch + b) * hs + j] = h_new[b * hs + j];
            }
        }
        h = h_new;
    }
    return {HostTensor::from({t_len, batch, hs}, y), HostTensor::from({batch, hs}, h),
            HostTensor::from({batch, hs}, c)};
}

// y, hn and cn as one tensor, for numeric_grad.
HostTensor joined(const std::vector<HostTensor>& out) {
    std::vector<double> v;
    for (size_t k = 0; k < 3; ++k) {
        auto part = out[k].values();
        v.insert(v.end(), part.begin(), part.end());
    }
    return HostTensor::from({v.size()}, v);
}

// A (T, B, F) tensor with its time axis reversed.
HostTensor time_reversed(const HostTensor& t) {
    const TensorShape& s = t.shape();
    auto v = t.values();
    std::vector<double> r(v.size());
    size_t step = s[1] * s[2];
    for (size_t k = 0; k < s[0]; ++k)
        std::copy_n(v.begin() + k * step, step, r.begin() + (s[0] - 1 - k) * step);
    return HostTensor::from(s, r);
}

}  // namespace

TEST(LSTMForward, HandComputedValues) {
    // Zero weights and bias: every sigmoid gate is 1/2 and g = 0, so c' = c / 2 and
    // h' = tanh(c') / 2 each step, whatever x and h.
    Dims z{2, 1, 2, 2};
    auto in = random_inputs(z, true, 3);
    in[2] = HostTensor::from({1, 2}, {0.8, -0.4});
    for (size_t k = 3; k < 6; ++k)
        in[k].set_values(std::vector<double>(in[k].values().size(), 0.0));
    auto out = forward(lstm_param(true, false), in);
    EXPECT_TRUE(tensors_near(out[0],
                             HostTensor::from({2, 1, 2}, {std::tanh(0.4) / 2, std::tanh(-0.2) / 2,
                                                          std::tanh(0.2) / 2, std::tanh(-0.1) / 2}),
                             1e-6));
    EXPECT_TRUE(tensors_near(out[2], HostTensor::from({1, 2}, {0.2, -0.1}), 1e-6));
    // The reserve of step 0: i, f, g, o, h before, c before, tanh(c after).
    auto res = out[3].values();
    std::vector<double> want{0.5, 0.5, 0.5, 0.5, 0, 0, 0.5, 0.5};
    for (size_t k = 0; k < 8; ++k)
        EXPECT_NEAR(res[k], want[k], 1e-7) << k;
    EXPECT_NEAR(res[10], 0.8, 1e-7);
    EXPECT_NEAR(res[12], std::tanh(0.4), 1e-7);
    // The bias's i block alone: i = sigmoid(2), the rest as before.
    in[5].set_values({2, 2, 0, 0, 0, 0, 0, 0});
    auto one = forward(lstm_param(true, false), {in[0], in[1], in[2], in[3], in[4], in[5]});
    EXPECT_NEAR(one[2].values()[0], 0.2, 1e-6);  // g = 0: i does not matter yet
    in[5].set_values({0, 0, 0, 0, 1, 1, 0, 0});  // g = tanh(1)
    auto two = forward(lstm_param(true, false), in);
    double c1 = 0.4 + 0.5 * std::tanh(1.0);
    EXPECT_NEAR(two[0].values()[0], std::tanh(c1) / 2, 1e-6);
}

TEST(LSTMForward, MatchesConcatenatedFormulation) {
    for (bool bias : {true, false})
        for (bool reverse : {false, true})
            for (Dims z : {Dims{1, 1, 1, 1}, Dims{3, 2, 4, 5}, Dims{5, 3, 2, 7}}) {
                auto p = lstm_param(bias, reverse);
                auto in = random_inputs(z, bias, 7);
                auto out = forward(p, in);
                auto want = reference(p, in);
                for (size_t k = 0; k < 3; ++k)
                    EXPECT_TRUE(tensors_near(out[k], want[k], 1e-5))
                            << param::to_string(p) << " output " << k;
            }
}

TEST(LSTMForward, ReverseIsTheForwardOfTheReversedSequence) {
    Dims z{6, 2, 3, 4};
    auto in = random_inputs(z, true, 9);
    auto rev = forward(lstm_param(true, true), in);
    auto flipped = in;
    flipped[0] = time_reversed(in[0]);
    auto fwd = forward(lstm_param(true, false), flipped);
    EXPECT_TRUE(tensors_near(rev[0], time_reversed(fwd[0]), 0));
    EXPECT_TRUE(tensors_near(rev[1], fwd[1], 0));
    EXPECT_TRUE(tensors_near(rev[2], fwd[2], 0));
}

TEST(LSTMBackward, MatchesFiniteDifferences) {
    for (bool bias : {true, false})
        for (bool reverse : {false, true})
            for (Dims z : {Dims{1, 1, 2, 1}, Dims{3, 2, 3, 4}}) {
                auto p = lstm_param(bias, reverse);
                auto in = random_inputs(z, bias, 21);
                auto out = forward(p, in);
                auto dy = random_tensor({z.t, z.b, z.h}, 31, -1, 1);
                auto dhn = random_tensor({z.b, z.h}, 32, -1, 1);
                auto dcn = random_tensor({z.b, z.h}, 33, -1, 1);
                auto op = make_op<LSTMBackward>(p);
                auto g = run_op(*op, {in[0], in[3], in[4], out[3], dy, dhn, dcn});
                ASSERT_EQ(g.size(), in.size());
                auto f = [&](const std::vector<HostTensor>& x) { return joined(forward(p, x)); };
                auto dall = joined({dy, dhn, dcn});
                for (size_t k = 0; k < in.size(); ++k)
                    EXPECT_TRUE(tensors_near(g[k], numeric_grad(f, in, k, dall), 5e-3))
                            << param::to_string(p) << " input " << k << " T " << z.t;
            }
}

TEST(LSTMForward, StridedTensors) {
    for (bool bias : {true, false}) {
        Dims z{3, 2, 5, 3};
        Checker<LSTMForward> c(naive_handle());
        c.set_param(lstm_param(bias, true))
                .set_noncontiguous(true)
                .execs(lstm_forward_shapes(z, bias));
        Checker<LSTMBackward> b(naive_handle());
        b.set_param(lstm_param(bias, false)).set_range(3, 0, 1).set_noncontiguous(true);
        b.execs({{3, 2, 5}, {12, 5}, {12, 3}, {3, 2, 21}, {3, 2, 3}, {2, 3}, {2, 3}});
        // x read through a transposed (batch-first) view, dy broadcast along time
        b.set_noncontiguous(false).exec_layouts(
                {TensorLayout({2, 3, 5}, dtype::Float32).dimshuffle({1, 0, 2}), f32({12, 5}),
                 f32({12, 3}), f32({3, 2, 21}), TensorLayout({3, 2, 3}, {0, 3, 1}, dtype::Float32),
                 f32({2, 3}), f32({2, 3})});
    }
}

TEST(LSTMForward, EmptySequenceKeepsTheState) {
    Dims z{0, 2, 3, 4};
    auto in = random_inputs(z, true, 5);
    auto out = forward(lstm_param(true, false), in);
    EXPECT_TRUE(out[0].shape().eq_shape(TensorShape{0, 2, 4}));
    EXPECT_TRUE(tensors_near(out[1], in[1], 0));
    EXPECT_TRUE(tensors_near(out[2], in[2], 0));
    auto op = make_op<LSTMBackward>(lstm_param(true, false));
    auto dhn = random_tensor({2, 4}, 1, -1, 1), dcn = random_tensor({2, 4}, 2, -1, 1);
    auto g = run_op(*op, {in[0], in[3], in[4], out[3], out[0], dhn, dcn});
    EXPECT_TRUE(tensors_near(g[1], dhn, 0));
    EXPECT_TRUE(tensors_near(g[2], dcn, 0));
    EXPECT_EQ(g[4].values(), std::vector<double>(16 * 4, 0.0));
}

TEST(LSTMForward, BadInputIsAClearError) {
    auto f32l = [](TensorShape s) { return f32(s); };
    std::vector<TensorLayout> good{f32l({3, 2, 5}), f32l({2, 4}),  f32l({2, 4}),
                                   f32l({16, 5}),   f32l({16, 4}), f32l({16})};
    EXPECT_NO_THROW(deduce<LSTMForward>(lstm_param(true, false), good));
    auto with = [&](size_t k, TensorLayout l) {
        auto v = good;
        v[k] = l;
        return v;
    };
    expect_error<ShapeError>([&] { deduce<LSTMForward>(lstm_param(false, false), good); },
                             {"expects 5 inputs, got 6"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false), with(0, f32l({6, 5})));
            },
            {"x {6(5),5(1)} float32 is not (seq_len"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false), with(1, f32l({3, 4})));
            },
            {"h0"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false), with(2, f32l({2, 5})));
            },
            {"c0", "is not {2,4}"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false), with(3, f32l({16, 4})));
            },
            {"w_ih", "is not {16,5}"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false), with(4, f32l({12, 4})));
            },
            {"w_hh"});
    expect_error<ShapeError>(
            [&] { deduce<LSTMForward>(lstm_param(true, false), with(5, f32l({8}))); }, {"bias"});
    expect_error<DTypeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false),
                                    with(0, TensorLayout({3, 2, 5}, dtype::Float16)));
            },
            {"x", "is not float32"});
    expect_error<DTypeError>(
            [&] {
                deduce<LSTMForward>(lstm_param(true, false),
                                    with(3, TensorLayout({16, 5}, dtype::Int32)));
            },
            {"w_ih"});
    std::vector<TensorLayout> bgood{f32l({3, 2, 5}), f32l({16, 5}), f32l({16, 4}), f32l({3, 2, 28}),
                                    f32l({3, 2, 4}), f32l({2, 4}),  f32l({2, 4})};
    EXPECT_NO_THROW(deduce<LSTMBackward>(lstm_param(true, false), bgood));
    auto bwith = [&](size_t k, TensorLayout l) {
        auto v = bgood;
        v[k] = l;
        return v;
    };
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMBackward>(lstm_param(true, false), bwith(1, f32l({15, 5})));
            },
            {"w_ih"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMBackward>(lstm_param(true, false), bwith(3, f32l({3, 2, 24})));
            },
            {"reserve"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSTMBackward>(lstm_param(true, false), bwith(4, f32l({2, 2, 4})));
            },
            {"dy"});
    expect_error<DTypeError>(
            [&] {
                deduce<LSTMBackward>(lstm_param(true, false),
                                     bwith(6, TensorLayout({2, 4}, dtype::Float16)));
            },
            {"dcn"});
    auto bw = deduce<LSTMBackward>(lstm_param(false, false), bgood);
    EXPECT_EQ(bw.size(), 5u);
}
