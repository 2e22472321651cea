// FakeQuant, TQT, LSQ and their backward operators on the naive backend: values MegEngine 1.13
// gives for the same inputs (half-away rounding, the clamp and the gradients' masks at the range's
// edges), per-channel scales broadcast along an axis, strided outputs, and bad input.
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/quantization.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::FakeQuant range(int32_t qmin, int32_t qmax) {
    param::FakeQuant p;
    p.qmin = qmin;
    p.qmax = qmax;
    return p;
}

// Points on both sides of the range [-4, 3] at step 0.5, ties included.
const std::vector<double> kX = {-3.0, -1.26, -0.75, -0.25, 0.25, 0.5,
                                0.75, 1.25,  1.5,   2.5,   6.0,  -7.0};

HostTensor x12() {
    return HostTensor::from({12}, kX);
}
HostTensor dy12() {
    std::vector<double> v(12);
    for (size_t i = 0; i < 12; ++i)
        v[i] = double(i + 1);
    return HostTensor::from({12}, v);
}
HostTensor scalar(double v) {
    return HostTensor::from({1}, {v});
}

template <class Op>
std::vector<HostTensor> run(const param::FakeQuant& p, const std::vector<HostTensor>& in) {
    auto op = make_op<Op>(p);
    return run_op(*op, in);
}

void expect_values(const HostTensor& t, const std::vector<double>& want, double eps = 1e-6) {
    EXPECT_TRUE(tensors_near(t, HostTensor::from(t.shape(), want), eps));
}

}  // namespace

// Reference values printed by MegEngine 1.13 for builtin.FakeQuant/TQT/LSQ(qmin=-4, qmax=3).
TEST(FakeQuant, MatchesMegEngine) {
    auto p = range(-4, 3);
    auto y = run<FakeQuant>(p, {x12(), scalar(0.5), scalar(1)});
    expect_values(y[0], {-2.5, -1.5, -1, -0.5, 0.5, 0.5, 1, 1, 1, 1, 1, -2.5});
    auto g = run<FakeQuantBackward>(p, {dy12(), x12(), scalar(0.5), scalar(1)});
    expect_values(g[0], {0, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0});
}

TEST(TQT, MatchesMegEngine) {
    auto p = range(-4, 3);
    auto y = run<TQT>(p, {x12(), scalar(-1)});
    expect_values(y[0], {-2, -1.5, -1, -0.5, 0.5, 0.5, 1, 1.5, 1.5, 1.5, 1.5, -2});
    auto g = run<TQTBackward>(p, {dy12(), x12(), scalar(-1)});
    expect_values(g[0], {0, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0});
    // MegEngine sums these to 5.7323284 for the scale.
    std::vector<double> gs = {-4, -0.96, -1.5, -2, 2.5, 0, 3.5, 4, 0, 30, 33, -48};
    double sum = 0;
    for (double& v : gs)
        v *= 0.5 * std::log(2.0);
    for (double v : g[1].values())
        sum += v;
    expect_values(g[1], gs, 1e-5);
    EXPECT_NEAR(sum, 5.7323284, 1e-5);
}

TEST(LSQ, MatchesMegEngine) {
    auto p = range(-4, 3);
    auto y = run<LSQ>(p, {x12(), scalar(0.5), scalar(1), scalar(0.25)});
    expect_values(y[0], {-2.5, -1.5, -1, 0, 0.5, 0.5, 1, 1, 1, 1, 1, -2.5});
    auto g = run<LSQBackward>(p, {dy12(), x12(), scalar(0.5), scalar(1), scalar(0.25)});
    expect_values(g[0], {0, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0});
    std::vector<double> gs = {-4, -0.96, -1.5, 2, 2.5, 0, 3.5, 24, 27, 30, 33, -48};
    double sum = 0;
    for (double& v : gs)
        v *= 0.25;
    for (double v : g[1].values())
        sum += v;
    expect_values(g[1], gs, 1e-5);
    EXPECT_NEAR(sum, 16.885, 1e-4);  // MegEngine's scale gradient
}

// A per-channel scale (C, 1) gives each row what a scalar scale gives it alone.
TEST(FakeQuant, PerChannelScaleBroadcasts) {
    auto p = range(-128, 127);
    auto x = random_tensor({3, 8}, 1, -3, 3);
    auto s = HostTensor::from({3, 1}, {0.01, 0.05, 0.2});
    auto zp = HostTensor::from({1}, {2});
    auto y = run<FakeQuant>(p, {x, s, zp})[0].values();
    auto xv = x.values();
    for (size_t c = 0; c < 3; ++c) {
        std::vector<double> row(xv.begin() + c * 8, xv.begin() + c * 8 + 8);
        auto yr = run<FakeQuant>(p, {HostTensor::from({8}, row), scalar(s.values()[c]), zp})[0];
        for (size_t i = 0; i < 8; ++i)
            EXPECT_EQ(y[c * 8 + i], yr.values()[i]) << c << " " << i;
    }
    auto tqt = run<TQTBackward>(p, {x, x, HostTensor::from({3, 1}, {-6, -4, -2})});
    EXPECT_EQ(tqt[1].shape().total_nr_elems(), 24u);
}

TEST(FakeQuant, StridedOutputs) {
    auto p = range(-8, 7);
    auto x = random_tensor({4, 5}, 2, -2, 2);
    auto s = HostTensor::from({1, 5}, {0.1, 0.2, 0.3, 0.4, 0.5});
    auto zp = HostTensor::from({1}, {0});
    auto gsc = HostTensor::from({1}, {0.5});
    expect_padded_outputs_match<FakeQuant>(p, {x, s, zp});
    expect_padded_outputs_match<FakeQuantBackward>(p, {x, x, s, zp});
    expect_padded_outputs_match<TQT>(p, {x, HostTensor::from({1}, {-3})});
    expect_padded_outputs_match<TQTBackward>(p, {x, x, HostTensor::from({1}, {-3})});
    expect_padded_outputs_match<LSQ>(p, {x, s, zp, gsc});
    expect_padded_outputs_match<LSQBackward>(p, {x, x, s, zp, gsc});
}

TEST(FakeQuant, EmptyInput) {
    auto y = run<FakeQuant>(range(-4, 3), {HostTensor::from({0, 3}, {}), scalar(1), scalar(0)});
    EXPECT_EQ(y[0].shape().total_nr_elems(), 0u);
}

TEST(FakeQuant, BadInput) {
    auto p = range(-4, 3);
    TensorLayout x({4, 3}, dtype::Float32), s({1}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                deduce<FakeQuant>(p, {x, TensorLayout({4}, dtype::Float32), s});
            },
            {"scale", "does not broadcast"});
    expect_error<ShapeError>(
            [&] {
                deduce<LSQ>(p, {x, TensorLayout({2, 4, 3}, dtype::Float32), s, s});
            },
            {"scale", "does not broadcast"});
    expect_error<ShapeError>(
            [&] {
                deduce<FakeQuantBackward>(p, {s, x, s, s});
            },
            {"diff", "does not broadcast"});
    expect_error<DTypeError>(
            [&] {
                deduce<TQT>(p, {TensorLayout({4}, dtype::Int32), s});
            },
            {"src", "not a float"});
    expect_error<ParamError>(
            [&] {
                deduce<FakeQuant>(range(3, -4), {x, s, s});
            },
            {"qmin 3 is above qmax -4"});
    expect_error<ShapeError>([&] { deduce<TQT>(p, {x}); }, {"expects 2 inputs"});
}
