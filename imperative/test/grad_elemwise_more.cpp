// Backward rules of the Elemwise modes in grad_rules/elemwise_more.cpp, against central
// differences of the forward op (first and second order).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_defs.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;
using Mode = dnn::param::Elemwise::Mode;

namespace {

CompNode cpu() {
    return CompNode::load("cpu0");
}

Tensor make(const std::vector<float>& v, const dnn::TensorShape& shape) {
    return Tensor::from_host(v.data(), shape, dnn::dtype::Float32, cpu());
}

[[maybe_unused]] Tensor make_i32(const std::vector<int32_t>& v, const dnn::TensorShape& shape) {
    return Tensor::from_host(v.data(), shape, dnn::dtype::Int32, cpu());
}

std::vector<float> values(const Tensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

Tensor ew(Mode m, std::vector<Tensor> in) {
    dnn::param::Elemwise p;
    p.mode = m;
    return imperative::apply(ops::Elemwise(p), in)[0];
}

template <class Op>
std::vector<Tensor> run(const typename Op::Param& p, std::vector<Tensor> in) {
    return imperative::apply(Op(p), in);
}

// A float input of the function under test.
struct In {
    std::vector<float> v;
    dnn::TensorShape shape;
};

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Fixed, uneven weights for output element i, so that sum(w * f) tells elements apart.
float weight(size_t out, size_t i) {
    return 0.5f + static_cast<float>((i * 37 + out * 11) % 13) / 8.f;
}

std::vector<Tensor> weights_like(const std::vector<Tensor>& ys) {
    std::vector<Tensor> w;
    for (size_t k = 0; k < ys.size(); ++k) {
        std::vector<float> v(ys[k].shape().total_nr_elems());
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = weight(k, i);
        w.push_back(make(v, ys[k].shape()));
    }
    return w;
}

double weighted_sum(const std::vector<Tensor>& ys) {
    double s = 0;
    for (size_t k = 0; k < ys.size(); ++k) {
        auto v = values(ys[k]);
        for (size_t i = 0; i < v.size(); ++i)
            s += static_cast<double>(weight(k, i)) * v[i];
    }
    return s;
}

std::vector<Tensor> make_all(const std::vector<In>& ins) {
    std::vector<Tensor> xs;
    for (auto& in : ins)
        xs.push_back(make(in.v, in.shape));
    return xs;
}

// Gradients of sum(w * f(xs)) by the tape; invalid where no gradient flows.
std::vector<Tensor> tape_grads(const Fn& f, std::vector<Tensor> xs) {
    auto key = GradKey::make();
    for (auto& x : xs)
        key->attach(x);
    key->activate();
    auto ys = f(xs);
    key->deactivate();
    return key->backward(ys, weights_like(ys), xs);
}

// Central differences of sum(w * f(xs)) w.r.t. input k.
std::vector<float> numeric(const Fn& f, std::vector<In> ins, size_t k, float h) {
    std::vector<float> g(ins[k].v.size());
    for (size_t i = 0; i < g.size(); ++i) {
        float orig = ins[k].v[i];
        ins[k].v[i] = orig + h;
        double plus = weighted_sum(f(make_all(ins)));
        ins[k].v[i] = orig - h;
        double minus = weighted_sum(f(make_all(ins)));
        ins[k].v[i] = orig;
        g[i] = static_cast<float>((plus - minus) / (2 * h));
    }
    return g;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol,
                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], tol * std::max(1.f, std::abs(want[i])))
                << what << ", element " << i;
}

// Every input's tape gradient against central differences (a zero expected gradient may also
// come back as no gradient at all).
void check_grad(const Fn& f, const std::vector<In>& ins, float tol = 1e-2f, float h = 1e-2f,
                const std::string& what = "") {
    auto g = tape_grads(f, make_all(ins));
    for (size_t k = 0; k < ins.size(); ++k) {
        auto want = numeric(f, ins, k, h);
        std::vector<float> got = g[k].valid() ? values(g[k]) : std::vector<float>(want.size(), 0.f);
        if (g[k].valid()) {
            EXPECT_TRUE(g[k].shape().eq_shape(ins[k].shape)) << what << " input " << k;
        }
        expect_close(got, want, tol, what + " input " + std::to_string(k));
    }
}

// Second order: the tape's gradient of sum(v * df/dx_k) against central differences of the
// (first-order, tape-computed) df/dx_k, for every input.
void check_second(const Fn& f, const std::vector<In>& ins, float tol = 2e-2f, float h = 1e-2f,
                  const std::string& what = "") {
    for (size_t k = 0; k < ins.size(); ++k) {
        Fn first = [&, k](const std::vector<Tensor>& xs) {
            return std::vector<Tensor>{tape_grads(f, xs)[k]};
        };
        auto outer = GradKey::make();
        auto xs = make_all(ins);
        for (auto& x : xs)
            outer->attach(x);
        outer->activate();
        auto d = first(xs);
        outer->deactivate();
        if (!d[0].valid())
            continue;  // f is flat in x_k: check_grad has seen that the first derivative is 0
        auto g2 = outer->backward(d, weights_like(d), xs);
        for (size_t j = 0; j < ins.size(); ++j) {
            auto want = numeric(first, ins, j, h);
            std::vector<float> got =
                    g2[j].valid() ? values(g2[j]) : std::vector<float>(want.size(), 0.f);
            expect_close(got, want, tol,
                         what + " d2/dx" + std::to_string(j) + "dx" + std::to_string(k));
        }
    }
}

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

TEST(GradElemwiseMore, PiecewiseConstantModesGiveZeroGradient) {
    std::vector<float> x{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    for (Mode m : {Mode::ROUND, Mode::FLOOR, Mode::CEIL, Mode::SIGN}) {
        auto g = tape_grads(unary(m), {make(x, {2, 3})});
        ASSERT_TRUE(g[0].valid());
        expect_close(values(g[0]), std::vector<float>(6, 0.f), 0, "zero gradient");
    }
    auto g = tape_grads(nary(Mode::FLOOR_DIV), {make(x, {2, 3}), make({0.7f, 1.1f, -0.9f}, {3})});
    ASSERT_TRUE(g[0].valid() && g[1].valid());
    EXPECT_EQ(g[1].shape().to_string(), "{3}");
    expect_close(values(g[0]), std::vector<float>(6, 0.f), 0, "FLOOR_DIV a");
    expect_close(values(g[1]), std::vector<float>(3, 0.f), 0, "FLOOR_DIV b");
}

TEST(GradElemwiseMore, BinaryModesWithBroadcasting) {
    std::vector<float> a{-1.3f, -0.4f, 0.6f, 1.7f, 2.2f, -2.6f};
    std::vector<float> b{0.7f, 1.35f, -0.95f};  // no ties with a, no quotient near an integer
    for (Mode m : {Mode::MAX, Mode::MIN, Mode::MOD, Mode::ATAN2, Mode::LOG_SUM_EXP}) {
        dnn::param::Elemwise p;
        p.mode = m;
        check_grad(nary(m), {{a, {2, 3}}, {b, {3}}}, 1e-2f, 1e-3f, ops::Elemwise(p).to_string());
        check_grad(nary(m), {{b, {3, 1}}, {a, {2, 1, 3}}}, 1e-2f, 1e-3f,
                   ops::Elemwise(p).to_string());
    }
}

TEST(GradElemwiseMore, MaxTiesGiveEveryTiedInputTheGradient) {
    // MegBrain's rule og * (x == max(x, y)): both inputs of a tie get the full gradient.
    auto g = tape_grads(nary(Mode::MAX), {make({1.f, 2.f}, {2}), make({1.f, 3.f}, {2})});
    expect_close(values(g[0]), {weight(0, 0), 0.f}, 1e-6f, "a");
    expect_close(values(g[1]), {weight(0, 0), weight(0, 1)}, 1e-6f, "b");
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
