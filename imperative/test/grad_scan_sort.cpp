// Backward rules of grad_rules/scan_sort.cpp (Reduce MAX/MIN/PRODUCT, Cumsum, TopK, Argsort,
// BatchedMatrixMul, Dot) against central differences and closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/reduce.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;
using RMode = dnn::param::Reduce::Mode;

using namespace neomeg::imperative::grad_check;

namespace {

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
