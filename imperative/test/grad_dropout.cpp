// Backward rules of DropoutForward and DropoutBackward against central differences (the mask is
// a function of the seed, so the forward is deterministic) and closed forms, first and second
// order.
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

dnn::param::Dropout dropout_param(float prob, uint64_t seed) {
    dnn::param::Dropout p;
    p.drop_prob = prob;
    p.seed = seed;
    return p;
}

std::vector<Tensor> dropout(const dnn::param::Dropout& p, const Tensor& x) {
    return imperative::apply(ops::DropoutForward(p), {&x, 1});
}

std::vector<uint8_t> mask_values(const Tensor& m) {
    std::vector<uint8_t> v(m.shape().total_nr_elems());
    m.to_host(v.data());
    return v;
}

const dnn::TensorShape kShape{4, 5, 3};

}  // namespace

TEST(GradDropout, ForwardClosedFormAndFiniteDifferences) {
    for (float prob : {0.f, 0.3f, 0.75f}) {
        SCOPED_TRACE(prob);
        auto p = dropout_param(prob, 1234);
        auto key = GradKey::make();
        Tensor x = make(rand_values(kShape, 1), kShape);
        key->attach(x);
        key->activate();
        auto y = dropout(p, x);
        key->deactivate();
        std::vector<Tensor> ys{y[0]}, wrt{x};
        std::vector<float> g = values(key->backward(ys, {}, wrt)[0]);
        std::vector<uint8_t> mask = mask_values(y[1]);
        size_t kept = 0;
        for (size_t i = 0; i < g.size(); ++i) {
            kept += mask[i];
            EXPECT_FLOAT_EQ(g[i], mask[i] ? 1.f / (1.f - prob) : 0.f) << "element " << i;
        }
        if (prob > 0) {  // the case must drop some elements and keep others to mean anything
            EXPECT_TRUE(kept > 0 && kept < g.size()) << kept;
        }
        check_grads([&](const std::vector<Tensor>& in) { return dropout(p, in[0])[0]; }, {kShape},
                    {true}, 2);
    }
}

TEST(GradDropout, BackwardOpAgainstFiniteDifferences) {
    auto p = dropout_param(0.4f, 99);
    Tensor mask = dropout(p, make(rand_values(kShape, 3), kShape))[1];
    check_grads(
            [&](const std::vector<Tensor>& in) {
                std::vector<Tensor> args{in[0], mask};
                return imperative::apply(ops::DropoutBackward(p), args)[0];
            },
            {kShape}, {true}, 4);
}

// The gradient of sum(r * dropout(x)^2) is a DropoutBackward whose diff depends on x; its
// gradient goes through DropoutBackward's rule and, via dropout(x), the forward's.
TEST(GradDropout, SecondOrderAgainstFiniteDifferencesOfTheGradient) {
    auto p = dropout_param(0.5f, 7);
    Tensor r = make(rand_values(kShape, 60), kShape);
    check_grads(
            [&](const std::vector<Tensor>& in) {
                auto inner = GradKey::make();
                Tensor x = in[0];
                inner->attach(x);
                inner->activate();
                Tensor y = dropout(p, x)[0];
                Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
                inner->deactivate();
                std::vector<Tensor> ys{l}, wrt{x};
                return inner->backward(ys, {}, wrt)[0];
            },
            {kShape}, {true}, 5);
}
