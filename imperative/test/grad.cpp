// Autograd against closed forms and finite differences, including second derivatives.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;
using namespace neomeg::imperative::grad_check;

namespace {

Tensor grad_of(GradKey& key, const Tensor& y, const Tensor& x) {
    std::vector<Tensor> ys{y}, wrt{x};
    return key.backward(ys, {}, wrt)[0];
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol = 1e-4f) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], tol * std::max(1.f, std::abs(b[i]))) << "element " << i;
}

// Central differences of sum(f(x)) at x.
std::vector<float> numeric_grad(const std::function<Tensor(const Tensor&)>& f, std::vector<float> x,
                                const dnn::TensorShape& shape, float h = 1e-2f) {
    std::vector<float> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        float orig = x[i];
        double s[2];
        for (int k = 0; k < 2; ++k) {
            x[i] = orig + (k ? -h : h);
            s[k] = 0;
            for (float v : values(f(make(x, shape))))
                s[k] += v;
        }
        x[i] = orig;
        g[i] = static_cast<float>((s[0] - s[1]) / (2 * h));
    }
    return g;
}

}  // namespace

TEST(Grad, PolynomialAgainstClosedForm) {
    auto key = GradKey::make();
    Tensor x = make({-1.5f, 0.f, 2.f}, {3});
    key->attach(x);
    key->activate();
    Tensor y = ew(Mode::ADD, {ew(Mode::MUL, {x, x}), x});  // x^2 + x
    key->deactivate();
    expect_near(values(grad_of(*key, y, x)), {-2.f, 1.f, 5.f});
}

TEST(Grad, NothingIsRecordedWithoutAnActiveKey) {
    auto key = GradKey::make();
    Tensor x = make({1.f}, {1});
    key->attach(x);
    Tensor y = ew(Mode::MUL, {x, x});
    EXPECT_FALSE(grad_of(*key, y, x).valid());
    EXPECT_FALSE(y.grad_meta());
}

TEST(Grad, BroadcastInputsGetSummedGradients) {
    auto key = GradKey::make();
    Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = make({10, 20, 30}, {3});
    key->attach(a);
    key->attach(b);
    key->activate();
    Tensor y = ew(Mode::MUL, {a, b});
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{a, b};
    auto g = key->backward(ys, {}, wrt);
    expect_near(values(g[0]), {10, 20, 30, 10, 20, 30});
    expect_near(values(g[1]), {5, 7, 9});
    EXPECT_EQ(g[1].shape().to_string(), "{3}");
}

TEST(Grad, SecondDerivativeOfCubeAndTanh) {
    // d2/dx2 x^3 = 6x; d2/dx2 tanh(x) = -2 tanh(x) (1 - tanh(x)^2)
    auto outer = GradKey::make(), inner = GradKey::make();
    std::vector<float> xs{-0.7f, 0.2f, 1.3f};
    Tensor x = make(xs, {3});
    outer->attach(x);
    inner->attach(x);
    outer->activate();
    inner->activate();
    Tensor cube = ew(Mode::MUL, {ew(Mode::MUL, {x, x}), x});
    Tensor th = ew(Mode::TANH, {x});
    inner->deactivate();
    Tensor d_cube = grad_of(*inner, cube, x);  // recorded by outer
    expect_near(values(d_cube), {3 * xs[0] * xs[0], 3 * xs[1] * xs[1], 3 * xs[2] * xs[2]});
    Tensor d_th = grad_of(*inner, th, x);
    outer->deactivate();
    expect_near(values(grad_of(*outer, d_cube, x)), {6 * xs[0], 6 * xs[1], 6 * xs[2]});
    std::vector<float> want;
    for (float v : xs)
        want.push_back(-2 * std::tanh(v) * (1 - std::tanh(v) * std::tanh(v)));
    expect_near(values(grad_of(*outer, d_th, x)), want);
}

TEST(Grad, NonDifferentiableOpsGiveNoGradient) {
    auto key = GradKey::make();
    Tensor x = make({3, 1, 2}, {3});
    key->attach(x);
    key->activate();
    Tensor idx = imperative::apply(ops::Argmax(), {&x, 1})[0];
    key->deactivate();
    EXPECT_FALSE(grad_of(*key, idx, x).valid());
}

TEST(Grad, MatrixMulAllTransposesAgainstFiniteDifferences) {
    std::vector<float> av{0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f}, bv{1.f, 2.f, -0.5f, 0.f, 3.f, 1.f};
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            dnn::param::MatrixMul p;
            p.transposeA = ta;
            p.transposeB = tb;
            // A is 2x3 logically (3x2 stored when ta), B is 3x2 logically.
            dnn::TensorShape as = ta ? dnn::TensorShape{3, 2} : dnn::TensorShape{2, 3};
            dnn::TensorShape bs = tb ? dnn::TensorShape{2, 3} : dnn::TensorShape{3, 2};
            auto run = [&](const Tensor& a, const Tensor& b) {
                std::vector<Tensor> in{a, b};
                return imperative::apply(ops::MatrixMul(p), in)[0];
            };
            auto key = GradKey::make();
            Tensor a = make(av, as), b = make(bv, bs);
            key->attach(a);
            key->attach(b);
            key->activate();
            Tensor c = run(a, b);
            key->deactivate();
            std::vector<Tensor> ys{c}, wrt{a, b};
            auto g = key->backward(ys, {}, wrt);
            expect_near(values(g[0]),
                        numeric_grad([&](const Tensor& t) { return run(t, make(bv, bs)); }, av, as),
                        1e-3f);
            expect_near(values(g[1]),
                        numeric_grad([&](const Tensor& t) { return run(make(av, as), t); }, bv, bs),
                        1e-3f);
        }
}

TEST(Grad, ViewOpsAndReduceAgainstFiniteDifferences) {
    std::vector<float> xv{0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f};
    dnn::TensorShape shape{2, 3};
    auto f = [](const Tensor& x) {
        param::Dimshuffle d;
        d.pattern = {1, 0};
        Tensor t = imperative::apply(ops::Dimshuffle(d), {&x, 1})[0];  // {3,2}
        param::Reshape r;
        r.shape = {6};
        t = imperative::apply(ops::Reshape(r), {&t, 1})[0];  // a copy: transposed strides
        Tensor w = Tensor::from_host(std::vector<float>{1, 2, 3, 4, 5, 6}.data(), {6},
                                     dnn::dtype::Float32, x.comp_node());
        t = ew(Mode::MUL, {ew(Mode::MUL, {t, t}), w});
        dnn::param::Reduce red;
        red.mode = dnn::param::Reduce::Mode::MEAN;
        return imperative::apply(ops::Reduce(red), {&t, 1})[0];
    };
    auto key = GradKey::make();
    Tensor x = make(xv, shape);
    key->attach(x);
    key->activate();
    Tensor y = f(x);
    key->deactivate();
    expect_near(values(grad_of(*key, y, x)), numeric_grad(f, xv, shape), 1e-3f);
}

TEST(Grad, AttachRejectsIntegerTensors) {
    auto key = GradKey::make();
    std::vector<int32_t> v{1};
    Tensor t = Tensor::from_host(v.data(), {1}, dnn::dtype::Int32, cpu());
    EXPECT_THROW(key->attach(t), dnn::DTypeError);
}

TEST(Grad, BackwardChecksOutputGradientShape) {
    auto key = GradKey::make();
    Tensor x = make({1, 2}, {2});
    key->attach(x);
    key->activate();
    Tensor y = ew(Mode::MUL, {x, x});
    key->deactivate();
    std::vector<Tensor> ys{y}, dys{make({1, 2, 3}, {3})}, wrt{x};
    EXPECT_THROW(key->backward(ys, dys, wrt), dnn::ShapeError);
    std::vector<Tensor> dys_ok{make({1, -1}, {2})};
    expect_near(values(key->backward(ys, dys_ok, wrt)[0]), {2, -4});
}

TEST(Grad, NewIdentityPassesGradientsButIsATensorOfItsOwn) {
    auto key = GradKey::make();
    Tensor x = make({1.f, 2.f}, {2});
    key->attach(x);
    key->activate();
    Tensor y = ew(Mode::MUL, {x, x});
    Tensor c = new_identity(y);
    key->attach(c);  // attaches c only
    Tensor z = ew(Mode::MUL, {c, y});
    key->deactivate();
    EXPECT_EQ(c.dnn_tensor().raw_ptr(), y.dnn_tensor().raw_ptr());  // the same storage
    std::vector<Tensor> ys{z}, wrt{x, y, c};
    auto g = key->backward(ys, {}, wrt);
    expect_near(values(g[0]), {4.f, 32.f});  // d(x^4)/dx through both factors
    expect_near(values(g[1]), {2.f, 8.f});   // 2y: y's own use and the identity's
    expect_near(values(g[2]), {1.f, 4.f});   // the other factor, y

    // No key recording: the new tensor has no autograd identity, so a later key's attachment
    // of x does not reach it.
    Tensor d = new_identity(x);
    EXPECT_FALSE(d.grad_meta());
    auto later = GradKey::make();
    later->attach(x);
    later->activate();
    Tensor w = ew(Mode::MUL, {d, d});
    later->deactivate();
    EXPECT_FALSE(grad_of(*later, w, x).valid());
}

TEST(Grad, AttachingToSuccessiveKeysKeepsOneSlot) {
    // One GradManager step after another: each key dies before the next attaches.
    Tensor x = make({1.f, 2.f}, {2});
    for (int step = 0; step < 100; ++step) {
        auto key = GradKey::make();
        key->attach(x);
        key->activate();
        Tensor y = ew(Mode::MUL, {x, x});
        key->deactivate();
        expect_near(values(grad_of(*key, y, x)), {2.f, 4.f});
    }
    ASSERT_TRUE(x.grad_meta());
    EXPECT_EQ(x.grad_meta()->slots.size(), 1u);
}

TEST(Grad, OnReadyReportsEachGradientOnceWhenItIsFinal) {
    // y = (x*w1)*w2*w3 + w1: w1 is read by the first op and the last, so its gradient is final
    // only after every other node ran; w3's is final as soon as its product's rule ran.
    auto key = GradKey::make();
    Tensor x = make({2.f}, {1}), w1 = make({3.f}, {1}), w2 = make({5.f}, {1}),
           w3 = make({7.f}, {1}), unused = make({1.f}, {1});
    for (Tensor* t : {&w1, &w2, &w3, &unused})
        key->attach(*t);
    key->activate();
    Tensor h = ew(Mode::MUL, {ew(Mode::MUL, {ew(Mode::MUL, {x, w1}), w2}), w3});
    Tensor y = ew(Mode::ADD, {h, w1});
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{w1, w2, w3, unused};
    std::vector<std::pair<size_t, float>> ready;
    auto grads = key->backward(
            ys, {}, wrt, [&](size_t i, const Tensor& g) { ready.emplace_back(i, values(g)[0]); });
    // dy/dw3 = x*w1*w2, dy/dw2 = x*w1*w3, dy/dw1 = x*w2*w3 + 1; nothing for `unused`.
    std::vector<std::pair<size_t, float>> expect{{2, 30.f}, {1, 42.f}, {0, 71.f}};
    EXPECT_EQ(ready, expect);
    EXPECT_EQ(values(grads[0])[0], 71.f);
    EXPECT_FALSE(grads[3].valid());
}

TEST(Grad, OnReadyReportsAnOutputThatIsAlsoAnInputAtOnce) {
    auto key = GradKey::make();
    Tensor w = make({4.f}, {1});
    key->attach(w);
    std::vector<Tensor> ys{w}, wrt{w};
    std::vector<size_t> ready;
    key->backward(ys, {}, wrt, [&](size_t i, const Tensor&) { ready.push_back(i); });
    EXPECT_EQ(ready, std::vector<size_t>{0});
}

// Backward drops each node's saved values and its outputs' gradients once the node has run, so
// its peak stays near the forward's: a chain of n tanh (each saving its 1 MiB output) used to
// hold every intermediate gradient too until backward ended (n MiB more).
TEST(Grad, BackwardFreesWhatEachNodeSavedAsItGoes) {
    constexpr size_t kElems = 1 << 18, kChain = 8, kMiB = 1 << 20;
    auto key = GradKey::make();
    Tensor x = make(std::vector<float>(kElems, 0.5f), {kElems});
    key->attach(x);
    key->activate();
    Tensor y = x;
    for (size_t i = 0; i < kChain; ++i)
        y = ew(Mode::TANH, {y});
    key->deactivate();
    CompNode cn = cpu();
    const size_t before = cn.memory_stats().allocated;
    cn.reset_peak_memory_stats();
    Tensor g = grad_of(*key, y, x);
    const size_t peak = cn.memory_stats().peak_allocated;
    // Live at once: the running dy and dx, the saved output being read, and the caller's y.
    EXPECT_LT(peak - before, 4 * kMiB) << "backward held " << (peak - before) / kMiB << " MiB";
    // d/dx of the chain by the chain rule, in double.
    double v = 0.5, d = 1;
    for (size_t i = 0; i < kChain; ++i) {
        v = std::tanh(v);
        d *= 1 - v * v;
    }
    EXPECT_NEAR(values(g)[0], d, 1e-5 * d);
    // The recording was consumed: a second backward through it is refused, not wrong.
    EXPECT_THROW(grad_of(*key, y, x), dnn::Error);
}
