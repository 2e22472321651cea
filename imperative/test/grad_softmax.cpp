// Backward rules of SoftmaxForward, LogSoftmaxForward and their backward ops against central
// differences, first and second order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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

std::vector<float> values(const Tensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

// Deterministic values in [-scale, scale).
std::vector<float> rand_values(const dnn::TensorShape& shape, uint32_t seed, float scale = 1.f) {
    std::vector<float> v(shape.total_nr_elems());
    uint32_t s = seed * 2654435761u + 12345u;
    for (float& x : v) {
        s = s * 1664525u + 1013904223u;
        x = scale * (static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f);
    }
    return v;
}

Tensor ew(Mode m, std::vector<Tensor> in) {
    dnn::param::Elemwise p;
    p.mode = m;
    return imperative::apply(ops::Elemwise(p), in)[0];
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks the gradients of L = sum(f(xs) * r), r a fixed random weight of f's output shape (so
// that a gradient landing on the wrong element shows), against central differences of L in each
// input marked in `wrt`, at xs = `xv`.
void check_grads_at(const Fn& f, const std::vector<dnn::TensorShape>& shapes,
                    std::vector<std::vector<float>> xv, const std::vector<bool>& wrt, uint32_t seed,
                    float tol = 1e-2f, float h = 1e-2f) {
    auto inputs = [&] {
        std::vector<Tensor> t;
        for (size_t i = 0; i < shapes.size(); ++i)
            t.push_back(make(xv[i], shapes[i]));
        return t;
    };
    auto key = GradKey::make();
    std::vector<Tensor> xs = inputs(), attached;
    for (size_t i = 0; i < xs.size(); ++i)
        if (wrt[i]) {
            key->attach(xs[i]);
            attached.push_back(xs[i]);
        }
    key->activate();
    Tensor y = f(xs);
    key->deactivate();
    std::vector<float> r = rand_values(y.shape(), seed + 1000);
    std::vector<Tensor> ys{y}, dys{make(r, y.shape())};
    auto grads = key->backward(ys, dys, attached);

    auto loss = [&] {
        std::vector<float> out = values(f(inputs()));
        double s = 0;
        for (size_t k = 0; k < out.size(); ++k)
            s += static_cast<double>(out[k]) * r[k];
        return s;
    };
    size_t a = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
        if (!wrt[i])
            continue;
        const Tensor& g = grads[a++];
        ASSERT_TRUE(g.valid()) << "input " << i << " got no gradient";
        ASSERT_EQ(g.shape().to_string(), shapes[i].to_string()) << "input " << i;
        std::vector<float> got = values(g);
        for (size_t k = 0; k < xv[i].size(); ++k) {
            float orig = xv[i][k];
            xv[i][k] = orig + h;
            double up = loss();
            xv[i][k] = orig - h;
            double down = loss();
            xv[i][k] = orig;
            auto want = static_cast<float>((up - down) / (2 * h));
            EXPECT_NEAR(got[k], want, tol * std::max(1.f, std::abs(want)))
                    << "input " << i << " element " << k;
        }
    }
}

// check_grads_at random values in [-scale, scale).
void check_grads(const Fn& f, const std::vector<dnn::TensorShape>& shapes,
                 const std::vector<bool>& wrt, uint32_t seed = 1, float scale = 1.f) {
    std::vector<std::vector<float>> xv;
    for (size_t i = 0; i < shapes.size(); ++i)
        xv.push_back(rand_values(shapes[i], seed + 17 * static_cast<uint32_t>(i), scale));
    check_grads_at(f, shapes, std::move(xv), wrt, seed);
}

template <class Op>
Tensor run1(int32_t axis, const Tensor& x) {
    dnn::param::Softmax p;
    p.axis = axis;
    return imperative::apply(Op(p), {&x, 1})[0];
}

template <class Op>
Tensor run2(int32_t axis, const Tensor& a, const Tensor& b) {
    dnn::param::Softmax p;
    p.axis = axis;
    std::vector<Tensor> in{a, b};
    return imperative::apply(Op(p), in)[0];
}

// The gradient of sum(r * f(x)^2) with respect to x, computed with an inner key while the caller's
// key records: a backward op whose diff depends on x, differentiated again by check_grads.
Tensor inner_grad_of_square(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0,
                            const Tensor& r) {
    auto inner = GradKey::make();
    Tensor x = x0;
    inner->attach(x);
    inner->activate();
    Tensor y = f(x);
    Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
    inner->deactivate();
    std::vector<Tensor> ys{l}, wrt{x};
    return inner->backward(ys, {}, wrt)[0];
}

const dnn::TensorShape kShape{2, 3, 4};

}  // namespace

TEST(GradSoftmax, ForwardAgainstFiniteDifferences) {
    for (int32_t axis : {-1, 0, 1, 2}) {
        SCOPED_TRACE(axis);
        check_grads(
                [&](const std::vector<Tensor>& x) { return run1<ops::SoftmaxForward>(axis, x[0]); },
                {kShape}, {true}, 1, 2.f);
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return run1<ops::LogSoftmaxForward>(axis, x[0]);
                },
                {kShape}, {true}, 2, 2.f);
    }
}

// The backward ops are formulas in (dst, diff) for any dst, so they are checked directly too.
TEST(GradSoftmax, BackwardOpsAgainstFiniteDifferences) {
    for (int32_t axis : {-1, 1}) {
        SCOPED_TRACE(axis);
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return run2<ops::SoftmaxBackward>(axis, x[0], x[1]);
                },
                {kShape, kShape}, {true, true}, 3);
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return run2<ops::LogSoftmaxBackward>(axis, x[0], x[1]);
                },
                {kShape, kShape}, {true, true}, 4);
    }
}

TEST(GradSoftmax, SecondOrderAgainstFiniteDifferencesOfTheGradient) {
    Tensor r = make(rand_values(kShape, 50), kShape);
    for (int32_t axis : {-1, 0}) {
        SCOPED_TRACE(axis);
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return inner_grad_of_square(
                            [&](const Tensor& t) { return run1<ops::SoftmaxForward>(axis, t); },
                            x[0], r);
                },
                {kShape}, {true}, 5, 2.f);
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return inner_grad_of_square(
                            [&](const Tensor& t) { return run1<ops::LogSoftmaxForward>(axis, t); },
                            x[0], r);
                },
                {kShape}, {true}, 6, 2.f);
    }
}

// Closed form: softmax sums to 1 along the axis, so the gradient of its sum is 0.
TEST(GradSoftmax, GradientOfTheSumIsZero) {
    auto key = GradKey::make();
    Tensor x = make({1.f, 2.f, 3.f}, {3});
    key->attach(x);
    key->activate();
    Tensor y = run1<ops::SoftmaxForward>(0, x);
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{x};
    for (float v : values(key->backward(ys, {}, wrt)[0]))
        EXPECT_NEAR(v, 0.f, 1e-6f);
}
