// Backward rules of SoftmaxForward, LogSoftmaxForward and their backward ops against central
// differences, first and second order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/norm.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;
using namespace neomeg::imperative::grad_check::single;

namespace {

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
