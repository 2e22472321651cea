// Backward rules of the Elemwise modes in grad_rules/elemwise_more.cpp, against central
// differences of the forward op (first and second order).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;

namespace {

Fn unary(Mode m) {
    return [m](const std::vector<Tensor>& x) { return std::vector<Tensor>{ew(m, {x[0]})}; };
}

Fn nary(Mode m) {
    return [m](const std::vector<Tensor>& x) { return std::vector<Tensor>{ew(m, x)}; };
}

const std::vector<float> kSigned{-0.83f, -0.41f, -0.12f, 0.07f, 0.36f, 0.77f};
const std::vector<float> kPositive{0.21f, 0.48f, 0.93f, 1.4f, 2.2f, 3.1f};

struct UnaryCase {
    Mode mode;
    std::vector<float> x;
};

std::vector<UnaryCase> smooth_unary_cases() {
    std::vector<float> wide{-4.5f, -2.2f, -0.6f, 0.45f, 1.9f, 4.4f};  // spans the H_SWISH pieces
    return {
            {Mode::ABS, kSigned},
            {Mode::EXPM1, kSigned},
            {Mode::LOG1P, kSigned},
            {Mode::SQRT, kPositive},
            {Mode::RSQRT, kPositive},
            {Mode::SIN, wide},
            {Mode::COS, wide},
            {Mode::TAN, kSigned},
            {Mode::ASIN, kSigned},
            {Mode::ACOS, kSigned},
            {Mode::ATAN, wide},
            {Mode::SINH, wide},
            {Mode::COSH, wide},
            {Mode::ASINH, wide},
            {Mode::ACOSH, {1.2f, 1.5f, 2.f, 3.f, 4.5f, 7.f}},
            {Mode::ATANH, kSigned},
            {Mode::ERF, wide},
            {Mode::ERFC, wide},
            {Mode::ERFINV, kSigned},
            {Mode::ERFCINV, {0.2f, 0.55f, 0.9f, 1.1f, 1.45f, 1.8f}},
            {Mode::GELU, wide},
            {Mode::SILU, wide},
            {Mode::H_SWISH, wide},
            {Mode::HSIGMOID, wide},
            {Mode::RELU6, {-1.f, 0.5f, 2.f, 5.5f, 6.5f, 9.f}},
            {Mode::SOFTPLUS, wide},
            {Mode::LOGSIGMOID, wide},
    };
}

}  // namespace

TEST(GradElemwiseMore, UnaryModesAgainstFiniteDifferences) {
    for (auto& c : smooth_unary_cases()) {
        dnn::param::Elemwise p;
        p.mode = c.mode;
        check_grad(unary(c.mode), {{c.x, {2, 3}}}, 1e-2f, 1e-3f, ops::Elemwise(p).to_string());
    }
}

TEST(GradElemwiseMore, SecondDerivativesOfUnaryModes) {
    // Through the fused *_GRAD modes (GELU, SILU, SOFTPLUS, LOGSIGMOID, H_SWISH, ABS, RELU6,
    // HSIGMOID) and through composed rules (the rest).
    for (auto& c : smooth_unary_cases()) {
        dnn::param::Elemwise p;
        p.mode = c.mode;
        check_second(unary(c.mode), {{c.x, {2, 3}}}, 2e-2f, 1e-3f, ops::Elemwise(p).to_string());
    }
}

TEST(GradElemwiseMore, FusedGradModesInBothInputs) {
    std::vector<float> x{-4.5f, -2.2f, -0.6f, 0.45f, 1.9f, 4.4f},
            d{0.7f, -1.3f, 2.1f, 0.4f, -0.9f, 1.6f};
    for (Mode m : {Mode::GELU_GRAD, Mode::SILU_GRAD, Mode::SOFTPLUS_GRAD, Mode::LOGSIGMOID_GRAD,
                   Mode::H_SWISH_GRAD, Mode::HSIGMOID_GRAD, Mode::RELU6_GRAD, Mode::ABS_GRAD}) {
        dnn::param::Elemwise p;
        p.mode = m;
        // d broadcast along the rows: its gradient is summed back to {3}.
        check_grad(nary(m), {{x, {2, 3}}, {{0.7f, -1.3f, 2.1f}, {3}}}, 1e-2f, 1e-3f,
                   ops::Elemwise(p).to_string());
        check_second(nary(m), {{x, {2, 3}}, {d, {2, 3}}}, 2e-2f, 1e-3f,
                     ops::Elemwise(p).to_string());
    }
}

TEST(GradElemwiseMore, PiecewiseConstantModesGiveNoGradient) {
    // MegEngine leaves a parameter reached only through these modes with grad None, not zeros.
    std::vector<float> x{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    for (Mode m : {Mode::ROUND, Mode::FLOOR, Mode::CEIL, Mode::SIGN}) {
        auto g = tape_grads(unary(m), {make(x, {2, 3})});
        EXPECT_FALSE(g[0].valid());
    }
    auto g = tape_grads(nary(Mode::FLOOR_DIV), {make(x, {2, 3}), make({0.7f, 1.1f, -0.9f}, {3})});
    EXPECT_FALSE(g[0].valid());
    EXPECT_FALSE(g[1].valid());
}

TEST(GradElemwiseMore, BinaryModesWithBroadcasting) {
    std::vector<float> a{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    std::vector<float> b{0.7f, 1.35f, -0.95f};  // no ties with a, no quotient near an integer
    for (Mode m : {Mode::MAX, Mode::MIN, Mode::MOD, Mode::ATAN2, Mode::LOG_SUM_EXP, Mode::PRELU}) {
        dnn::param::Elemwise p;
        p.mode = m;
        check_grad(nary(m), {{a, {2, 3}}, {b, {3}}}, 1e-2f, 1e-3f, ops::Elemwise(p).to_string());
        check_grad(nary(m), {{b, {3, 1}}, {a, {2, 1, 3}}}, 1e-2f, 1e-3f,
                   ops::Elemwise(p).to_string());
    }
}

TEST(GradElemwiseMore, MaxMinTiesGiveTheFirstInputTheGradient) {
    // MegEngine 1.13's rule (COND_LEQ_MOV / COND_LT_MOV on the inputs): a tie's gradient goes
    // to input 0 alone, so it is not counted twice; NaN on either side gives neither any.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> a{1.f, 2.f, 0.f, nan, 1.f}, b{1.f, 3.f, -0.f, 1.f, nan};
    auto gmax = tape_grads(nary(Mode::MAX), {make(a, {5}), make(b, {5})});
    expect_close(values(gmax[0]), {weight(0, 0), 0.f, weight(0, 2), 0.f, 0.f}, 0, "max a");
    expect_close(values(gmax[1]), {0.f, weight(0, 1), 0.f, 0.f, 0.f}, 0, "max b");
    auto gmin = tape_grads(nary(Mode::MIN), {make(a, {5}), make(b, {5})});
    expect_close(values(gmin[0]), {weight(0, 0), weight(0, 1), weight(0, 2), 0.f, 0.f}, 0, "min a");
    expect_close(values(gmin[1]), {0.f, 0.f, 0.f, 0.f, 0.f}, 0, "min b");
}

TEST(GradElemwiseMore, PReluAtZeroGivesXOneAndTheSlopeNothing) {
    // x < 0 ? x * slope : x, the select's gradient: x's is 1 at either zero (MegEngine 1.13's
    // F.leaky_relu and F.prelu), slope * dy below; the slope's is x * dy below, 0 elsewhere, and
    // sums over the axes it broadcasts along.
    std::vector<float> x{-2.f, 0.f, -0.f, 3.f, -1.f, 0.5f};
    auto g = tape_grads(nary(Mode::PRELU), {make(x, {2, 3}), make({0.25f, -0.5f, 2.f}, {3})});
    expect_close(values(g[0]),
                 {0.25f * weight(0, 0), weight(0, 1), weight(0, 2), weight(0, 3),
                  -0.5f * weight(0, 4), weight(0, 5)},
                 1e-6f, "prelu x");
    expect_close(values(g[1]), {-2.f * weight(0, 0), -1.f * weight(0, 4), 0.f}, 1e-6f,
                 "prelu slope");
}

TEST(GradElemwiseMore, ClipInEveryRegionWithBroadcastBounds) {
    // x below, inside and above [lo, hi] per column, and a last column with lo > hi (hi wins).
    std::vector<float> x{-2.f, 0.3f, 3.f, 0.5f, -0.7f, 0.2f, 1.6f, 4.f};
    std::vector<float> lo{-1.f, -1.f, -1.f, 1.f}, hi{1.f, 1.f, 1.f, -1.f};
    check_grad(nary(Mode::CLIP), {{x, {2, 4}}, {lo, {4}}, {hi, {4}}}, 1e-2f, 1e-3f, "CLIP");
    check_grad(nary(Mode::CLIP), {{x, {2, 4}}, {{-0.5f}, {1}}, {{0.9f, 1.2f}, {2, 1}}}, 1e-2f,
               1e-3f, "CLIP scalar lo");
}

TEST(GradElemwiseMore, FusedMultiplyAddsWithBroadcasting) {
    std::vector<float> a{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    check_grad(nary(Mode::FUSE_MUL_ADD3),
               {{a, {2, 3}}, {{0.5f, -2.f, 1.5f}, {3}}, {{0.25f, 3.f}, {2, 1}}}, 1e-2f, 1e-2f,
               "FMA3");
    check_grad(nary(Mode::FUSE_MUL_ADD4),
               {{a, {2, 3}}, {{0.5f, -2.f, 1.5f}, {3}}, {{0.25f, 3.f}, {2, 1}}, {a, {2, 3}}}, 1e-2f,
               1e-2f, "FMA4");
}

TEST(GradElemwiseMore, CondSendsGradientToTheBranchesOnly) {
    std::vector<float> a{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    Fn f = [](const std::vector<Tensor>& x) {
        Tensor c = ew(Mode::LT, {x[0], x[1]});  // recorded: c carries a slot too
        return std::vector<Tensor>{ew(Mode::COND, {c, x[0], x[1]})};
    };
    check_grad(f, {{a, {2, 3}}, {{0.5f, -2.f, 1.5f}, {3}}}, 1e-2f, 1e-3f, "COND");
    // The mask itself gets no gradient.
    auto key = GradKey::make();
    Tensor x = make(a, {2, 3});
    key->attach(x);
    key->activate();
    Tensor c = ew(Mode::LT, {x, make({0.f}, {1})});
    Tensor y = ew(Mode::COND, {c, x, make({0.f}, {1})});
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{c, x};
    auto g = key->backward(ys, {}, wrt);
    EXPECT_FALSE(g[0].valid());
    expect_close(values(g[1]), {1, 1, 0, 0, 0, 1}, 0, "COND x");
}

TEST(GradElemwiseMore, ComparisonsAndClassifiersGiveNoGradient) {
    for (Mode m : {Mode::EQ, Mode::NE, Mode::LT, Mode::LEQ}) {
        auto g = tape_grads(nary(m), {make({1.f, 2.f}, {2}), make({2.f, 2.f}, {2})});
        EXPECT_FALSE(g[0].valid());
        EXPECT_FALSE(g[1].valid());
    }
    for (Mode m : {Mode::ISNAN, Mode::ISINF}) {
        auto g = tape_grads(unary(m), {make({1.f, 2.f}, {2})});
        EXPECT_FALSE(g[0].valid());
    }
}
