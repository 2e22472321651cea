// Backward rules of BatchNormForward (training and inference), LayerNormForward and
// GroupNormForward against central differences of the forward ops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "grad_check.h"
#include "neomeg/dnn/param_base.h"
#include "neomeg/dnn/params/elemwise.h"
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

using BnMode = dnn::param::BatchNorm::FwdMode;

dnn::param::BatchNorm bn_param(BnMode mode) {
    dnn::param::BatchNorm p;
    p.fwd_mode = mode;
    p.epsilon = 1e-3f;
    p.momentum = 0.8f;
    return p;
}

// Inputs: src, scale, bias, running_mean, running_var (positive: it is under a square root in
// inference).
std::vector<std::vector<float>> bn_values(const dnn::TensorShape& src, const dnn::TensorShape& ch,
                                          uint32_t seed) {
    std::vector<std::vector<float>> v;
    for (uint32_t i = 0; i < 4; ++i)
        v.push_back(rand_values(i == 0 ? src : ch, seed + i));
    std::vector<float> var = rand_values(ch, seed + 4);
    for (float& x : var)
        x = 0.5f + std::abs(x);
    v.push_back(var);
    return v;
}

}  // namespace

TEST(GradNorm, BatchNormAgainstFiniteDifferences) {
    struct Case {
        dnn::TensorShape src, channel;
    };
    std::vector<Case> cases{{{5, 3}, {3}},
                            {{3, 2, 2, 3}, {1, 2, 1, 1}},
                            {{3, 2, 2, 3}, {2}},
                            {{2, 3, 5}, {1, 3, 1}}};
    for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE})
        for (const auto& c : cases) {
            auto p = bn_param(mode);
            SCOPED_TRACE(c.src.to_string() + " " + dnn::param::to_string(p));
            auto f = [&](const std::vector<Tensor>& x) {
                return imperative::apply(ops::BatchNormForward(p), x)[0];
            };
            check_grads_at(f, {c.src, c.channel, c.channel, c.channel, c.channel},
                           bn_values(c.src, c.channel, 3), {true, true, true, false, false}, 3);
            check_grads_at(f, {c.src, c.channel, c.channel, c.channel, c.channel},
                           bn_values(c.src, c.channel, 4), {false, true, false, false, false}, 4);
        }
}

TEST(GradNorm, BatchNormRunningStatisticsGetNoGradient) {
    dnn::TensorShape src{4, 2}, ch{2};
    auto v = bn_values(src, ch, 1);
    for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE}) {
        std::vector<Tensor> in{make(v[0], src), make(v[1], ch), make(v[2], ch), make(v[3], ch),
                               make(v[4], ch)};
        auto key = GradKey::make();
        for (auto& t : in)
            key->attach(t);
        key->activate();
        Tensor y = imperative::apply(ops::BatchNormForward(bn_param(mode)), in)[0];
        key->deactivate();
        std::vector<Tensor> ys{y};
        auto g = key->backward(ys, {}, in);
        EXPECT_TRUE(g[0].valid() && g[1].valid() && g[2].valid());
        EXPECT_FALSE(g[3].valid());
        EXPECT_FALSE(g[4].valid());
    }
}

// The rule takes no gradient for the statistics outputs (no zeros filled in for them); when only
// a statistics output got a gradient (ignored, as in MegEngine), dst's is zeros and so are the
// input gradients.
TEST(GradNorm, BatchNormGradientOfStatisticsOnlyIsZero) {
    dnn::TensorShape src{4, 2, 3, 3}, ch{1, 2, 1, 1};
    auto v = bn_values(src, ch, 2);
    std::vector<Tensor> in{make(v[0], src), make(v[1], ch), make(v[2], ch), make(v[3], ch),
                           make(v[4], ch)};
    auto key = GradKey::make();
    for (size_t i = 0; i < 3; ++i)
        key->attach(in[i]);
    key->activate();
    auto y = imperative::apply(ops::BatchNormForward(bn_param(BnMode::TRAINING)), in);
    key->deactivate();
    std::vector<Tensor> ys{y[1]};
    auto g = key->backward(ys, {}, std::span(in).first(3));
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(g[i].valid()) << i;
        for (float x : values(g[i]))
            EXPECT_EQ(x, 0.f) << i;
    }
}

TEST(GradNorm, LayerNormAgainstFiniteDifferences) {
    dnn::TensorShape src{2, 3, 4};
    for (uint32_t nd : {1u, 2u, 3u})
        for (bool affine : {true, false}) {
            dnn::param::LayerNorm p;
            p.affine = affine;
            p.eps = 1e-3f;
            p.normalized_dim = nd;
            SCOPED_TRACE(dnn::param::to_string(p));
            dnn::TensorShape w;
            w.ndim = nd;
            for (size_t i = 0; i < nd; ++i)
                w[i] = src[src.ndim - nd + i];
            auto f = [&](const std::vector<Tensor>& x) {
                return imperative::apply(ops::LayerNormForward(p), x)[0];
            };
            if (affine)
                check_grads(f, {src, w, w}, {true, true, true}, 5);
            else
                check_grads(f, {src}, {true}, 6);
        }
}

TEST(GradNorm, GroupNormAgainstFiniteDifferences) {
    struct Case {
        dnn::TensorShape src;
        uint32_t group;
    };
    std::vector<Case> cases{{{2, 4, 3}, 1}, {{2, 4, 3}, 2}, {{2, 4, 3}, 4}, {{2, 6, 2, 2}, 3}};
    for (const auto& c : cases)
        for (bool affine : {true, false}) {
            dnn::param::GroupNorm p;
            p.affine = affine;
            p.eps = 1e-3f;
            p.group = c.group;
            SCOPED_TRACE(c.src.to_string() + " " + dnn::param::to_string(p));
            dnn::TensorShape w{c.src[1]};
            auto f = [&](const std::vector<Tensor>& x) {
                return imperative::apply(ops::GroupNormForward(p), x)[0];
            };
            if (affine)
                check_grads(f, {c.src, w, w}, {true, true, true}, 7);
            else
                check_grads(f, {c.src}, {true}, 8);
        }
}

namespace {

// The gradient of sum(r * f(xs)^2) with respect to xs[which], computed with an inner key while
// check_grads' key records: differentiating it again takes the rules' composed path (the fused
// backward ops have no rules), statistics included.
Tensor inner_grad(const ScalarFn& f, const std::vector<Tensor>& in, const Tensor& r, size_t which) {
    using M = dnn::param::Elemwise::Mode;
    auto inner = GradKey::make();
    std::vector<Tensor> x = in;
    inner->attach(x[which]);
    inner->activate();
    Tensor y = f(x);
    Tensor l = ew(M::MUL, {ew(M::MUL, {y, y}), r});
    inner->deactivate();
    std::vector<Tensor> ys{l}, wrt{x[which]};
    return inner->backward(ys, {}, wrt)[0];
}

}  // namespace

TEST(GradNorm, SecondOrderAgainstFiniteDifferencesOfTheGradient) {
    struct Case {
        std::string name;
        ScalarFn f;
        std::vector<dnn::TensorShape> shapes;
        std::vector<std::vector<float>> values;  // empty: random
        std::vector<bool> wrt;
        std::vector<size_t> inner_wrt;  // which inputs the inner gradient is taken in
    };
    std::vector<Case> cases;
    dnn::TensorShape src{3, 2, 2, 3};
    for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE})
        for (dnn::TensorShape ch : {dnn::TensorShape{2}, dnn::TensorShape{1, 2, 1, 1}}) {
            auto p = bn_param(mode);
            cases.push_back({dnn::param::to_string(p) + ch.to_string(),
                             [p](const std::vector<Tensor>& x) {
                                 return imperative::apply(ops::BatchNormForward(p), x)[0];
                             },
                             {src, ch, ch, ch, ch},
                             bn_values(src, ch, 12),
                             {true, true, true, false, false},
                             {0, 1, 2}});
        }
    for (uint32_t nd : {1u, 2u})
        for (bool affine : {true, false}) {
            dnn::param::LayerNorm p;
            p.affine = affine;
            p.eps = 1e-3f;
            p.normalized_dim = nd;
            dnn::TensorShape w = nd == 1 ? dnn::TensorShape{3} : dnn::TensorShape{2, 3};
            std::vector<dnn::TensorShape> shapes{src};
            if (affine)
                shapes = {src, w, w};
            cases.push_back({dnn::param::to_string(p),
                             [p](const std::vector<Tensor>& x) {
                                 return imperative::apply(ops::LayerNormForward(p), x)[0];
                             },
                             shapes,
                             {},
                             std::vector<bool>(shapes.size(), true),
                             affine ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0}});
        }
    for (bool affine : {true, false}) {
        dnn::param::GroupNorm p;
        p.affine = affine;
        p.eps = 1e-3f;
        p.group = 2;
        dnn::TensorShape gsrc{2, 4, 3}, w{4};
        std::vector<dnn::TensorShape> shapes{gsrc};
        if (affine)
            shapes = {gsrc, w, w};
        cases.push_back({dnn::param::to_string(p),
                         [p](const std::vector<Tensor>& x) {
                             return imperative::apply(ops::GroupNormForward(p), x)[0];
                         },
                         shapes,
                         {},
                         std::vector<bool>(shapes.size(), true),
                         affine ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0}});
    }
    for (const auto& c : cases)
        for (size_t which : c.inner_wrt) {
            SCOPED_TRACE(c.name + " inner gradient in input " + std::to_string(which));
            Tensor r = make(rand_values(c.shapes[0], 40), c.shapes[0]);
            ScalarFn second = [&](const std::vector<Tensor>& x) {
                return inner_grad(c.f, x, r, which);
            };
            std::vector<std::vector<float>> v = c.values;
            for (size_t i = v.size(); i < c.shapes.size(); ++i)
                v.push_back(rand_values(c.shapes[i], 30 + static_cast<uint32_t>(i)));
            // The composed gradient (taken while another key records) equals the fused one.
            std::vector<Tensor> xs;
            for (size_t i = 0; i < v.size(); ++i)
                xs.push_back(make(v[i], c.shapes[i]));
            std::vector<float> fused = values(inner_grad(c.f, xs, r, which));
            auto recording = GradKey::make();
            recording->activate();
            std::vector<float> composed = values(inner_grad(c.f, xs, r, which));
            recording->deactivate();
            ASSERT_EQ(fused.size(), composed.size());
            for (size_t k = 0; k < fused.size(); ++k)
                EXPECT_NEAR(composed[k], fused[k], 1e-4f * std::max(1.f, std::abs(fused[k])))
                        << "element " << k;
            check_grads_at(second, c.shapes, v, c.wrt, 13);
        }
}
