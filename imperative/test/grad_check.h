// Gradient checks shared by the backward-rule tests: tape gradients of sum(w * f(xs)) with fixed,
// uneven weights w, against central differences, for first and second derivatives.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"

namespace neomeg::imperative::grad_check {

namespace dnn = ::neomeg::dnn;
using Mode = dnn::param::Elemwise::Mode;

inline CompNode cpu() {
    return CompNode::load("cpu0");
}

inline Tensor make(const std::vector<float>& v, const dnn::TensorShape& shape) {
    return Tensor::from_host(v.data(), shape, dnn::dtype::Float32, cpu());
}

inline Tensor make_i32(const std::vector<int32_t>& v, const dnn::TensorShape& shape) {
    return Tensor::from_host(v.data(), shape, dnn::dtype::Int32, cpu());
}

inline std::vector<float> values(const Tensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

inline Tensor ew(Mode m, std::vector<Tensor> in) {
    dnn::param::Elemwise p;
    p.mode = m;
    return imperative::apply(ops::Elemwise(p), in)[0];
}

template <class Op>
inline std::vector<Tensor> run(const typename Op::Param& p, std::vector<Tensor> in) {
    return imperative::apply(Op(p), in);
}

// A float input of the function under test.
struct In {
    std::vector<float> v;
    dnn::TensorShape shape;
};

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Fixed, uneven weights for output element i, so that sum(w * f) tells elements apart.
inline float weight(size_t out, size_t i) {
    return 0.5f + static_cast<float>((i * 37 + out * 11) % 13) / 8.f;
}

inline std::vector<Tensor> weights_like(const std::vector<Tensor>& ys) {
    std::vector<Tensor> w;
    for (size_t k = 0; k < ys.size(); ++k) {
        std::vector<float> v(ys[k].shape().total_nr_elems());
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = weight(k, i);
        w.push_back(make(v, ys[k].shape()));
    }
    return w;
}

inline double weighted_sum(const std::vector<Tensor>& ys) {
    double s = 0;
    for (size_t k = 0; k < ys.size(); ++k) {
        auto v = values(ys[k]);
        for (size_t i = 0; i < v.size(); ++i)
            s += static_cast<double>(weight(k, i)) * v[i];
    }
    return s;
}

inline std::vector<Tensor> make_all(const std::vector<In>& ins) {
    std::vector<Tensor> xs;
    for (auto& in : ins)
        xs.push_back(make(in.v, in.shape));
    return xs;
}

// Gradients of sum(w * f(xs)) by the tape; invalid where no gradient flows.
inline std::vector<Tensor> tape_grads(const Fn& f, std::vector<Tensor> xs) {
    auto key = GradKey::make();
    for (auto& x : xs)
        key->attach(x);
    key->activate();
    auto ys = f(xs);
    key->deactivate();
    return key->backward(ys, weights_like(ys), xs);
}

// Central differences of sum(w * f(xs)) w.r.t. input k.
inline std::vector<float> numeric(const Fn& f, std::vector<In> ins, size_t k, float h) {
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

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol,
                         const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], tol * std::max(1.f, std::abs(want[i])))
                << what << ", element " << i;
}

// Every input's tape gradient against central differences (a zero expected gradient may also
// come back as no gradient at all).
inline void check_grad(const Fn& f, const std::vector<In>& ins, float tol = 1e-2f, float h = 1e-2f,
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
inline void check_second(const Fn& f, const std::vector<In>& ins, float tol = 2e-2f,
                         float h = 1e-2f, const std::string& what = "") {
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

// Deterministic values in [-scale, scale).
inline std::vector<float> rand_values(const dnn::TensorShape& shape, uint32_t seed,
                                      float scale = 1.f) {
    std::vector<float> v(shape.total_nr_elems());
    uint32_t s = seed * 2654435761u + 12345u;
    for (float& x : v) {
        s = s * 1664525u + 1013904223u;
        x = scale * (static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f);
    }
    return v;
}

// Checks for functions of one output, weighted by a random r: L = sum(f(xs) * r).
namespace single {

using ScalarFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks the gradients of L = sum(f(xs) * r), r a fixed random weight of f's output shape (so
// that a gradient landing on the wrong element shows), against central differences of L in each
// input marked in `wrt`, at xs = `xv`.
inline void check_grads_at(const ScalarFn& f, const std::vector<dnn::TensorShape>& shapes,
                           std::vector<std::vector<float>> xv, const std::vector<bool>& wrt,
                           uint32_t seed, float tol = 1e-2f, float h = 1e-2f) {
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
inline void check_grads(const ScalarFn& f, const std::vector<dnn::TensorShape>& shapes,
                        const std::vector<bool>& wrt, uint32_t seed = 1, float scale = 1.f) {
    std::vector<std::vector<float>> xv;
    for (size_t i = 0; i < shapes.size(); ++i)
        xv.push_back(rand_values(shapes[i], seed + 17 * static_cast<uint32_t>(i), scale));
    check_grads_at(f, shapes, std::move(xv), wrt, seed);
}

}  // namespace single
}  // namespace neomeg::imperative::grad_check
