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
#include "neomeg/imperative/op_defs.h"

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

}  // namespace neomeg::imperative::grad_check
