// Every Elemwise *_GRAD mode against central differences of its forward mode, on points on both
// sides of every kink (kept a few steps away from it, where the derivative is not defined).
#include <cmath>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

HostTensor elemwise(Mode mode, const std::vector<HostTensor>& in) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = mode;
    return run_op(*op, in)[0];
}

struct GradCase {
    Mode forward;
    Mode grad;
    bool takes_output;  // the grad mode reads the forward's output y instead of its input x
};

const std::vector<GradCase> kCases = {
        {Mode::RELU, Mode::SWITCH_GT0, false},
        {Mode::ABS, Mode::ABS_GRAD, false},
        {Mode::SIGMOID, Mode::SIGMOID_GRAD, true},
        {Mode::TANH, Mode::TANH_GRAD, true},
        {Mode::GELU, Mode::GELU_GRAD, false},
        {Mode::SILU, Mode::SILU_GRAD, false},
        {Mode::H_SWISH, Mode::H_SWISH_GRAD, false},
        {Mode::HSIGMOID, Mode::HSIGMOID_GRAD, false},
        {Mode::RELU6, Mode::RELU6_GRAD, false},
        {Mode::SOFTPLUS, Mode::SOFTPLUS_GRAD, false},
        {Mode::LOGSIGMOID, Mode::LOGSIGMOID_GRAD, false},
};

// Points in [-8, 8] at least 0.05 away from the kinks at -3, 0, 3 and 6.
std::vector<double> smooth_points() {
    std::vector<double> xs;
    for (double x = -7.9; x < 8; x += 0.173) {
        bool near_kink = false;
        for (double k : {-3.0, 0.0, 3.0, 6.0})
            near_kink |= std::abs(x - k) < 0.05;
        if (!near_kink)
            xs.push_back(x);
    }
    return xs;
}

}  // namespace

TEST(ElemwiseGrad, EveryGradModeMatchesFiniteDifferencesOfItsForward) {
    auto xs = smooth_points();
    TensorShape shape{xs.size()};
    auto x = HostTensor::from(shape, xs);
    std::mt19937 rng(7);
    HostTensor dy(shape, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    for (auto& c : kCases) {
        auto forward = [&](const std::vector<HostTensor>& in) { return elemwise(c.forward, in); };
        auto want = numeric_grad(forward, {x}, 0, dy, 1e-2);
        auto first = c.takes_output ? elemwise(c.forward, {x}) : x;
        auto got = elemwise(c.grad, {first, dy});
        EXPECT_TRUE(tensors_near(got, want, 2e-3)) << to_string(c.grad);
    }
}

TEST(ElemwiseGrad, EveryGradModeIsCovered) {
    size_t grads = 0;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i) {
        std::string_view name = param::Elemwise::kModeNames[i];
        grads += name.ends_with("_GRAD") || name == "SWITCH_GT0";
    }
    EXPECT_EQ(grads, kCases.size());
}

TEST(ElemwiseGrad, GradModesAtTheKinksFollowMegDNN) {
    // At a kink the subgradient is a choice; these are MegDNN's.
    auto at = [](Mode m, std::vector<double> x) {
        auto dy = HostTensor::from({x.size()}, std::vector<double>(x.size(), 1));
        return elemwise(m, {HostTensor::from({x.size()}, x), dy}).values();
    };
    EXPECT_EQ(at(Mode::SWITCH_GT0, {0, 1e-30}), (std::vector<double>{0, 1}));
    // kern_defs.cuh's x > 0 ? y : -y, as MegEngine 1.13's F.abs gradient shows at 0
    EXPECT_EQ(at(Mode::ABS_GRAD, {0, -0.0, -2, 1e-30}), (std::vector<double>{-1, -1, -1, 1}));
    EXPECT_EQ(at(Mode::RELU6_GRAD, {0, 6, 5.99}), (std::vector<double>{0, 0, 1}));
    EXPECT_EQ(at(Mode::HSIGMOID_GRAD, {-3, 3, 0}), (std::vector<double>{0, 0, double(1.0f / 6)}));
    auto h = at(Mode::H_SWISH_GRAD, {-3, 3, 0});
    EXPECT_NEAR(h[0], -0.5, 1e-7);
    EXPECT_NEAR(h[1], 1.5, 1e-7);
    EXPECT_NEAR(h[2], 0.5, 1e-7);
}

TEST(ElemwiseGrad, LowPrecisionFloatsMatchFloat32) {
    auto xs = smooth_points();
    TensorShape shape{xs.size()};
    std::mt19937 rng(8);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = HostTensor::from(shape, xs, dt);
        HostTensor dy(shape, dt);
        fill_uniform(dy, -1, 1, rng);
        auto x32 = HostTensor::from(shape, x.values());
        auto dy32 = HostTensor::from(shape, dy.values());
        for (auto& c : kCases) {
            auto got = elemwise(c.grad, {x, dy});
            auto want = elemwise(c.grad, {x32, dy32});
            EXPECT_EQ(got.dtype(), dt);
            EXPECT_TRUE(
                    tensors_near(HostTensor::from(shape, got.values()), want, default_epsilon(dt)))
                    << to_string(c.grad) << " on " << dt.name();
        }
    }
}
