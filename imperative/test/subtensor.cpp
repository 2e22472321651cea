// Subtensor eagerly: a view sharing the input's storage (negative strides included) that the
// kernels read as it is, and its gradient (zeros of the input's shape with dy where the view
// took its elements) against central differences and by known values.
#include <gtest/gtest.h>

#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_layouts.h"

using namespace neomeg;
using namespace neomeg::imperative;
using namespace neomeg::imperative::grad_check;

namespace {

constexpr int32_t N = param::kSubtensorNone;

// x[k0, b:e:s] of a 2-d tensor and the like: (axis, begin, end, step, is_index) per item.
param::Subtensor items(std::vector<std::array<int32_t, 5>> v) {
    param::Subtensor p;
    for (auto& it : v) {
        p.axis.push_back(it[0]);
        p.begin.push_back(it[1]);
        p.end.push_back(it[2]);
        p.step.push_back(it[3]);
        p.is_index.push_back(it[4]);
    }
    return p;
}

std::vector<Tensor> sub(const param::Subtensor& p, std::vector<Tensor> in) {
    return imperative::apply(ops::Subtensor(p), in);
}

std::vector<float> iota(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(i);
    return v;
}

}  // namespace

TEST(Subtensor, EagerResultIsAViewOfTheInputsStorage) {
    Tensor x = make(iota(20), {4, 5});
    // x[1:, ::-2]
    Tensor y = sub(items({{0, 1, N, N, 0}, {1, N, N, -2, 0}}), {x})[0];
    EXPECT_EQ(y.blob().get(), x.blob().get());
    EXPECT_EQ(y.layout().stride[1], -2);
    EXPECT_EQ(values(y), (std::vector<float>{9, 7, 5, 14, 12, 10, 19, 17, 15}));
    // Kernels read the negative-stride view as it is: y + y, y's rows summed.
    EXPECT_EQ(values(ew(Mode::ADD, {y, y})),
              (std::vector<float>{18, 14, 10, 28, 24, 20, 38, 34, 30}));
    // x[2] of the transposed x: column 2.
    Tensor xt = x.view(x.layout().dimshuffle({1, 0}));
    Tensor c = sub(items({{0, 2, N, N, 1}}), {xt})[0];
    EXPECT_EQ(values(c), (std::vector<float>{2, 7, 12, 17}));
    // x[-1, -1]: 0-d.
    Tensor s = sub(items({{0, -1, N, N, 1}, {1, -1, N, N, 1}}), {x})[0];
    EXPECT_EQ(s.shape().ndim, 0u);
    EXPECT_EQ(values(s), (std::vector<float>{19}));
}

TEST(Subtensor, GradientIsDyPlacedIntoZeros) {
    // x[1:, ::-2] of a 4x5: dy lands at rows 1..3, columns 4, 2, 0.
    auto p = items({{0, 1, N, N, 0}, {1, N, N, -2, 0}});
    auto key = GradKey::make();
    Tensor x = make(iota(20), {4, 5});
    key->attach(x);
    key->activate();
    Tensor y = sub(p, {x})[0];
    key->deactivate();
    Tensor dy = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
    auto g = key->backward({&y, 1}, {&dy, 1}, {&x, 1});
    ASSERT_TRUE(g[0].valid());
    EXPECT_TRUE(g[0].shape().eq_shape({4, 5}));
    EXPECT_EQ(values(g[0]), (std::vector<float>{0, 0, 0, 0, 0,  //
                                                3, 0, 2, 0, 1,  //
                                                6, 0, 5, 0, 4,  //
                                                9, 0, 8, 0, 7}));
}

TEST(Subtensor, GradientAgainstFiniteDifferences) {
    struct Case {
        param::Subtensor p;
        dnn::TensorShape shape;
    };
    std::vector<Case> cases{
            {items({{0, 2, N, N, 1}}), {4, 5}},                     // x[2]
            {items({{1, -2, N, N, 1}, {0, 3, 0, -1, 0}}), {4, 5}},  // x[3:0:-1, -2]
            {items({{2, 1, N, 2, 0}}), {2, 3, 5}},                  // x[..., 1::2]
            {items({{0, 1, 1, N, 0}}), {4, 5}},                     // empty
            {items({}), {3, 2}},                                    // whole
            {items({{0, 0, N, N, 1}}), {1}},                        // 1 element to 0-d
    };
    for (const auto& c : cases) {
        Fn f = [&](const std::vector<Tensor>& x) { return sub(c.p, x); };
        auto v = rand_values(c.shape, 7);
        check_grad(f, {{v, c.shape}}, 1e-3f, 1e-2f, ops::Subtensor(c.p).to_string());
        // The gradient's own ops (IndexingIncrMultiAxisVec of dy) are differentiable: f is
        // linear, so its second derivative is 0.
        check_second(f, {{v, c.shape}}, 1e-3f, 1e-2f, ops::Subtensor(c.p).to_string());
    }
}
