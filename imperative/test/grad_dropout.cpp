// Backward rules of DropoutForward and DropoutBackward against central differences (the mask is
// a function of the seed, so the forward is deterministic) and closed forms, first and second
// order.
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
