// Backward rules of grad_rules/scan_sort.cpp (Reduce MAX/MIN/PRODUCT, Cumsum, TopK, Argsort,
// BatchedMatrixMul, Dot) against central differences and closed forms.
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
using RMode = dnn::param::Reduce::Mode;

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

// Distinct values at least 0.1 apart (no ties, so no FD step crosses a rank change).
std::vector<float> distinct(size_t n, float shift = 0.f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>((i * 7 + 3) % n) * 0.37f - 1.1f + shift;
    return v;
}

dnn::param::Reduce reduce_p(RMode m, int32_t axis) {
    dnn::param::Reduce p;
    p.mode = m;
    p.axis = axis;
    return p;
}

}  // namespace

TEST(GradScanSort, ReduceMaxMinAlongEachAxis) {
    for (RMode m : {RMode::MAX, RMode::MIN})
        for (int32_t axis : {0, 1, -1}) {
            auto p = reduce_p(m, axis);
            Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Reduce>(p, x); };
            check_grad(f, {{distinct(12), {3, 4}}}, 1e-3f, 1e-2f, ops::Reduce(p).to_string());
            check_second(
                    [&](const std::vector<Tensor>& x) {
                        Tensor r = run<ops::Reduce>(p, {x[0]})[0];
                        return std::vector<Tensor>{ew(Mode::MUL, {r, r})};
                    },
                    {{distinct(12), {3, 4}}}, 1e-2f, 1e-2f, "second order");
        }
}

TEST(GradScanSort, ReduceMaxTiesEachGetTheGradient) {
    auto p = reduce_p(RMode::MAX, 1);
    Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Reduce>(p, x); };
    auto g = tape_grads(f, {make({1.f, 3.f, 3.f, 2.f, 5.f, 4.f}, {2, 3})});
    expect_close(values(g[0]), {0, weight(0, 0), weight(0, 0), 0, weight(0, 1), 0}, 1e-6f, "ties");
}

TEST(GradScanSort, ReduceProductWithZeros) {
    for (int32_t axis : {0, 1}) {
        auto p = reduce_p(RMode::PRODUCT, axis);
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Reduce>(p, x); };
        std::vector<float> none{0.5f, -1.2f, 2.f,  1.5f, 0.8f,  -0.7f,
                                1.1f, -2.f,  0.9f, 1.3f, -0.6f, 1.7f};
        check_grad(f, {{none, {3, 4}}}, 1e-3f, 1e-2f, "PRODUCT no zeros");
        check_second(f, {{none, {3, 4}}}, 1e-2f, 1e-2f, "PRODUCT second order");
        // Row 0 / column 0 has one zero, row 1 / column 1 two zeros.
        std::vector<float> zeros{0.f,  -1.2f, 2.f,  1.5f, 0.f,   0.f,
                                 1.1f, -2.f,  0.9f, 0.f,  -0.6f, 1.7f};
        check_grad(f, {{zeros, {3, 4}}}, 1e-3f, 1e-2f, "PRODUCT with zeros");
    }
}

TEST(GradScanSort, CumsumInEveryDirection) {
    for (int32_t axis : {0, -1})
        for (bool exclusive : {false, true})
            for (bool reverse : {false, true}) {
                dnn::param::Cumsum p;
                p.axis = axis;
                p.exclusive = exclusive;
                p.reverse = reverse;
                Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Cumsum>(p, x); };
                check_grad(f, {{distinct(12), {3, 4}}}, 1e-3f, 1e-2f, ops::Cumsum(p).to_string());
            }
}

TEST(GradScanSort, TopKEveryModeAndDirection) {
    using TMode = dnn::param::TopK::Mode;
    for (TMode m : {TMode::KTH_ONLY, TMode::VALUE_IDX_NOSORT, TMode::VALUE_IDX_SORTED})
        for (int32_t k : {1, 2, -3}) {
            dnn::param::TopK p;
            p.mode = m;
            p.k = k;
            Fn f = [&](const std::vector<Tensor>& x) {
                return std::vector<Tensor>{run<ops::TopK>(p, x)[0]};  // values only
            };
            check_grad(f, {{distinct(15), {3, 5}}}, 1e-3f, 1e-2f, ops::TopK(p).to_string());
            check_grad(f, {{distinct(10), {10}}}, 1e-3f, 1e-2f, ops::TopK(p).to_string() + " 1-D");
        }
}

TEST(GradScanSort, ArgsortBothOrders) {
    using Order = dnn::param::Argsort::Order;
    for (Order o : {Order::ASCENDING, Order::DESCENDING}) {
        dnn::param::Argsort p;
        p.order = o;
        Fn f = [&](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{run<ops::Argsort>(p, x)[0]};
        };
        check_grad(f, {{distinct(24), {2, 3, 4}}}, 1e-3f, 1e-2f, ops::Argsort(p).to_string());
    }
}

TEST(GradScanSort, BatchedMatrixMulAllTransposes) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            dnn::param::MatrixMul p;
            p.transposeA = ta;
            p.transposeB = tb;
            dnn::TensorShape as = ta ? dnn::TensorShape{2, 3, 2} : dnn::TensorShape{2, 2, 3};
            dnn::TensorShape bs = tb ? dnn::TensorShape{2, 4, 3} : dnn::TensorShape{2, 3, 4};
            Fn f = [&](const std::vector<Tensor>& x) { return run<ops::BatchedMatrixMul>(p, x); };
            check_grad(f, {{distinct(12), as}, {distinct(24, 0.3f), bs}}, 1e-3f, 1e-2f,
                       ops::BatchedMatrixMul(p).to_string());
            check_second(
                    [&](const std::vector<Tensor>& x) {
                        Tensor c = run<ops::BatchedMatrixMul>(p, x)[0];
                        return std::vector<Tensor>{ew(Mode::MUL, {c, c})};
                    },
                    {{distinct(12), as}, {distinct(24, 0.3f), bs}}, 2e-2f, 1e-2f, "second order");
        }
}

TEST(GradScanSort, Dot) {
    Fn f = [](const std::vector<Tensor>& x) { return run<ops::Dot>({}, x); };
    check_grad(f, {{distinct(5), {5}}, {distinct(5, 0.4f), {5}}}, 1e-3f, 1e-2f, "Dot");
    check_second(
            [](const std::vector<Tensor>& x) {
                Tensor c = run<ops::Dot>({}, x)[0];
                return std::vector<Tensor>{ew(Mode::MUL, {c, c})};
            },
            {{distinct(5), {5}}, {distinct(5, 0.4f), {5}}}, 2e-2f, 1e-2f, "Dot second order");
}

TEST(GradScanSort, SortSecondOrderThroughScatter) {
    dnn::param::TopK p;
    p.mode = dnn::param::TopK::Mode::VALUE_IDX_SORTED;
    p.k = -2;
    Fn f = [&](const std::vector<Tensor>& x) {
        Tensor v = run<ops::TopK>(p, {x[0]})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {ew(Mode::MUL, {v, v}), x[1]})};
    };
    check_second(f, {{distinct(15), {3, 5}}, {distinct(6, 0.2f), {3, 2}}}, 1e-2f, 1e-2f, "TopK");
    dnn::param::Argsort ap;
    Fn g = [&](const std::vector<Tensor>& x) {
        Tensor v = run<ops::Argsort>(ap, {x[0]})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {v, v})};
    };
    check_second(g, {{distinct(12), {3, 4}}}, 1e-2f, 1e-2f, "Argsort");
}
