// Backward rules of grad_rules/indexing.cpp against central differences, with repeated and
// negative indices, broadcast values and every axis parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/tensor_shape.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;

namespace {

std::vector<float> ramp(size_t n, float shift = 0.f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::sin(static_cast<float>(i) * 1.3f + shift) * 2.f;
    return v;
}

dnn::param::IndexingAxis axis_p(int32_t axis) {
    dnn::param::IndexingAxis p;
    p.axis = axis;
    return p;
}

dnn::param::IndexingMultiAxis axes_p(std::vector<int32_t> axes) {
    dnn::param::IndexingMultiAxis p;
    p.axes = std::move(axes);
    return p;
}

}  // namespace

TEST(GradIndexing, IndexingOneHotAlongEachAxis) {
    // src {2, 3, 4}; index has src's shape without the axis.
    struct Case {
        int32_t axis;
        std::vector<int32_t> idx;
        dnn::TensorShape shape;
    };
    for (auto& c :
         {Case{0, {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0}, {3, 4}},
          Case{1, {2, 0, 1, 1, 0, 2, 2, 1}, {2, 4}}, Case{-1, {3, 0, 1, 3, 2, 2}, {2, 3}}}) {
        Tensor index = make_i32(c.idx, c.shape);
        Fn f = [&](const std::vector<Tensor>& x) {
            return run<ops::IndexingOneHot>(axis_p(c.axis), {x[0], index});
        };
        check_grad(f, {{ramp(24), {2, 3, 4}}}, 1e-3f, 1e-2f,
                   "IndexingOneHot axis " + std::to_string(c.axis));
    }
}

TEST(GradIndexing, IndexingSetOneHotAndOneHotSecondOrder) {
    Tensor index = make_i32({2, 0, 1, 1, 0, 2, 2, 1}, {2, 4});
    Fn f = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingSetOneHot>(axis_p(1), {x[0], index, x[1]});
    };
    check_grad(f, {{ramp(24), {2, 3, 4}}, {ramp(8, 1.f), {2, 1, 4}}}, 1e-3f, 1e-2f,
               "IndexingSetOneHot");
    // d/dsrc of sum(w * OneHot(src) * d) is IndexingSetOneHot into zeros, whose rule is checked
    // here.
    Fn g = [&](const std::vector<Tensor>& x) {
        Tensor picked = run<ops::IndexingOneHot>(axis_p(1), {x[0], index})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {ew(Mode::MUL, {picked, picked}), x[1]})};
    };
    check_second(g, {{ramp(24), {2, 3, 4}}, {ramp(8, 1.f), {2, 1, 4}}}, 1e-2f, 1e-2f,
                 "OneHot second order");
}

TEST(GradIndexing, IndexingMultiAxisVecWithRepeatsNegativesAndSplitAxes) {
    // One axis, repeated and negative indices.
    Tensor i1 = make_i32({2, -1, 0, 2}, {4});
    Fn f1 = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingMultiAxisVec>(axes_p({1}), {x[0], i1});
    };
    check_grad(f1, {{ramp(24), {2, 4, 3}}}, 1e-3f, 1e-2f, "axes {1}");
    // Two non-adjacent axes with broadcasting index tensors ({2,1} and {3}).
    Tensor a = make_i32({1, 0}, {2, 1}), b = make_i32({3, 0, 3}, {3});
    Fn f2 = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingMultiAxisVec>(axes_p({0, 2}), {x[0], a, b});
    };
    check_grad(f2, {{ramp(40), {2, 5, 4}}}, 1e-3f, 1e-2f, "axes {0, 2}");
    Fn f3 = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingMultiAxisVec>(axes_p({-1}), {x[0], i1});
    };
    check_grad(f3, {{ramp(12), {4, 3}}}, 1e-3f, 1e-2f, "axes {-1}");
}

TEST(GradIndexing, IndexingSetMultiAxisVecLastWriteWins) {
    // data {3, 4}; rows 2, 0, 2 (row 2 written twice: the second write wins), value {3, 4} and a
    // broadcast value {4}.
    Tensor rows = make_i32({2, 0, 2}, {3});
    Fn f = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingSetMultiAxisVec>(axes_p({0}), {x[0], x[1], rows});
    };
    check_grad(f, {{ramp(12), {3, 4}}, {ramp(12, 2.f), {3, 4}}}, 1e-3f, 1e-2f, "Set value {3,4}");
    check_grad(f, {{ramp(12), {3, 4}}, {ramp(4, 2.f), {4}}}, 1e-3f, 1e-2f, "Set value {4}");
    Tensor a = make_i32({1, 0, 1}, {3}), b = make_i32({-1, 2, 3}, {3});
    Fn g = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingSetMultiAxisVec>(axes_p({0, 2}), {x[0], x[1], a, b});
    };
    check_grad(g, {{ramp(40), {2, 5, 4}}, {ramp(5, 1.f), {1, 5}}}, 1e-3f, 1e-2f,
               "Set axes {0, 2}");  // indexed shape {3, 5}
}

TEST(GradIndexing, IndexingIncrMultiAxisVecAccumulates) {
    Tensor rows = make_i32({2, 0, 2, -3}, {4});
    Fn f = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingIncrMultiAxisVec>(axes_p({0}), {x[0], x[1], rows});
    };
    check_grad(f, {{ramp(12), {3, 4}}, {ramp(16, 2.f), {4, 4}}}, 1e-3f, 1e-2f, "Incr value {4,4}");
    check_grad(f, {{ramp(12), {3, 4}}, {ramp(4, 2.f), {4, 1}}}, 1e-3f, 1e-2f, "Incr value {4,1}");
    Fn g = [&](const std::vector<Tensor>& x) {
        return run<ops::IndexingIncrMultiAxisVec>(axes_p({1}), {x[0], x[1], rows});
    };
    check_grad(g, {{ramp(12), {4, 3}}, {ramp(4, 2.f), {4}}}, 1e-3f, 1e-2f, "Incr axes {1}");
}

TEST(GradIndexing, GatherAlongEachAxis) {
    Tensor i0 = make_i32({2, 0, 1, 2, 2, 2}, {2, 3});  // src {3, 4}: index rows <= 3, cols <= 4
    Fn f0 = [&](const std::vector<Tensor>& x) { return run<ops::Gather>(axis_p(0), {x[0], i0}); };
    check_grad(f0, {{ramp(12), {3, 4}}}, 1e-3f, 1e-2f, "Gather axis 0");
    Tensor i1 = make_i32({3, 3, 0, 1, 1, 1, 2, 0}, {2, 4});
    Fn f1 = [&](const std::vector<Tensor>& x) { return run<ops::Gather>(axis_p(-1), {x[0], i1}); };
    check_grad(f1, {{ramp(12), {3, 4}}}, 1e-3f, 1e-2f, "Gather axis -1");
}

TEST(GradIndexing, ScatterSetAndAddWithRepeatedIndices) {
    using SMode = dnn::param::Scatter::Mode;
    Tensor i0 =
            make_i32({2, 0, 2, 1, 0, 0}, {2, 3});  // column 0: row 2 twice; column 2: row 0 twice
    Tensor i1 = make_i32({3, 3, 0, 1, 1, 2}, {2, 3});
    for (SMode m : {SMode::SET, SMode::ADD})
        for (int32_t axis : {0, 1}) {
            dnn::param::Scatter p;
            p.axis = axis;
            p.mode = m;
            Tensor idx = axis == 0 ? i0 : i1;
            Fn f = [&](const std::vector<Tensor>& x) {
                return run<ops::Scatter>(p, {x[0], idx, x[1]});
            };
            check_grad(f, {{ramp(12), {3, 4}}, {ramp(6, 1.f), {2, 3}}}, 1e-3f, 1e-2f,
                       ops::Scatter(p).to_string());
        }
}

TEST(GradIndexing, CondTakeValuesGoBackToTheirPositions) {
    std::vector<int32_t> mv{1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0, 1};
    std::vector<uint8_t> bytes(mv.begin(), mv.end());
    Tensor mask = Tensor::from_host(bytes.data(), {3, 4}, dnn::dtype::Bool, cpu());
    Fn f = [&](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{
                imperative::apply(ops::CondTake(), std::vector<Tensor>{x[0], mask})[0]};
    };
    auto g = tape_grads(f, {make(ramp(12), {3, 4})});
    ASSERT_TRUE(g[0].valid());
    // The k-th taken element gets weight(0, k); elements not taken get 0.
    std::vector<float> want(12, 0.f);
    size_t k = 0;
    for (size_t i = 0; i < 12; ++i)
        if (mv[i])
            want[i] = weight(0, k++);
    expect_close(values(g[0]), want, 1e-6f, "CondTake");
    // Elements past count are unwritten, so only the first count values are compared by FD.
    Fn taken = [&](const std::vector<Tensor>& x) {
        auto out = imperative::apply(ops::CondTake(), std::vector<Tensor>{x[0], mask});
        dnn::param::Split sp;
        sp.sizes = {static_cast<int32_t>(k), static_cast<int32_t>(12 - k)};
        return std::vector<Tensor>{run<ops::Split>(sp, {out[0]})[0]};
    };
    auto gt = tape_grads(taken, {make(ramp(12), {3, 4})});
    expect_close(values(gt[0]), want, 1e-6f, "CondTake then Split");
}

TEST(GradIndexing, SecondOrderThroughTheWriteOps) {
    // d/dsrc of sum(w * g(src)^2 * d) goes through the backward's own ops (Scatter ADD,
    // IndexingIncrMultiAxisVec), whose rules give the mixed second derivatives.
    Tensor i0 = make_i32({2, 0, 1, 2, 2, 2}, {2, 3});
    Fn gather = [&](const std::vector<Tensor>& x) {
        Tensor g = run<ops::Gather>(axis_p(0), {x[0], i0})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {ew(Mode::MUL, {g, g}), x[1]})};
    };
    check_second(gather, {{ramp(12), {3, 4}}, {ramp(6, 1.f), {2, 3}}}, 1e-2f, 1e-2f, "Gather");
    Tensor rows = make_i32({2, -1, 0}, {3});
    Fn multi = [&](const std::vector<Tensor>& x) {
        Tensor g = run<ops::IndexingMultiAxisVec>(axes_p({0}), {x[0], rows})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {ew(Mode::MUL, {g, g}), x[1]})};
    };
    check_second(multi, {{ramp(12), {3, 4}}, {ramp(12, 1.f), {3, 4}}}, 1e-2f, 1e-2f,
                 "MultiAxisVec");
}
