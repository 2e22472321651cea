// Backward rules of PoolingForward, AdaptivePoolingForward and their backward ops (second order:
// average modes, and max pooling whose windows do not overlap) against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "grad_check.h"
#include "neomeg/dnn/param_base.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/pooling.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;
using namespace neomeg::imperative::grad_check::single;

namespace {

// Values of `shape` that are pairwise at least 0.05 apart, so that no central difference of step
// 1e-2 changes which element of a window is its maximum.
std::vector<float> distinct_values(const dnn::TensorShape& shape, uint32_t seed) {
    size_t n = shape.total_nr_elems();
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)  // 7919 is prime and n < 7919: a permutation of 0..n-1
        v[i] = static_cast<float>((i * 7919 + seed) % n) * 0.05f - 0.025f * static_cast<float>(n);
    return v;
}

// check_grads_at for a function of one input.
void check_grad_at(const std::function<Tensor(const Tensor&)>& f, std::vector<float> xv,
                   const dnn::TensorShape& shape, uint32_t seed) {
    check_grads_at([&](const std::vector<Tensor>& x) { return f(x[0]); }, {shape}, {std::move(xv)},
                   {true}, seed);
}

using PMode = dnn::param::Pooling::Mode;
using AMode = dnn::param::AdaptivePooling::Mode;

dnn::param::Pooling pool_param(PMode mode, std::vector<int32_t> window, std::vector<int32_t> stride,
                               std::vector<int32_t> padding) {
    dnn::param::Pooling p;
    p.mode = mode;
    p.window = std::move(window);
    p.stride = std::move(stride);
    p.padding = std::move(padding);
    return p;
}

Tensor pool(const dnn::param::Pooling& p, const Tensor& x) {
    return imperative::apply(ops::PoolingForward(p), {&x, 1})[0];
}

dnn::param::AdaptivePooling adaptive_param(AMode mode, std::vector<int32_t> shape) {
    dnn::param::AdaptivePooling p;
    p.mode = mode;
    p.shape = std::move(shape);
    return p;
}

Tensor adaptive_pool(const dnn::param::AdaptivePooling& p, const Tensor& x) {
    return imperative::apply(ops::AdaptivePoolingForward(p), {&x, 1})[0];
}

struct PoolCase {
    const char* name;
    dnn::TensorShape src;
    std::vector<int32_t> window, stride, padding;
};

std::vector<PoolCase> pool_cases() {
    return {
            {"2x2", {2, 2, 4, 6}, {2, 2}, {2, 2}, {0, 0}},
            // Overlapping windows, padding, and a width that floors.
            {"overlap_pad_floor", {1, 2, 5, 6}, {3, 2}, {2, 1}, {1, 1}},
            {"1d", {2, 3, 9}, {3}, {2}, {1}},
            {"3d", {1, 2, 4, 3, 5}, {2, 2, 3}, {2, 1, 2}, {1, 0, 1}},
    };
}

}  // namespace

TEST(GradPooling, ForwardAgainstFiniteDifferences) {
    for (PMode mode : {PMode::MAX, PMode::AVERAGE, PMode::AVERAGE_COUNT_EXCLUDE_PADDING})
        for (const auto& c : pool_cases()) {
            auto p = pool_param(mode, c.window, c.stride, c.padding);
            SCOPED_TRACE(std::string(c.name) + " " + dnn::param::to_string(p));
            check_grad_at([&](const Tensor& x) { return pool(p, x); }, distinct_values(c.src, 3),
                          c.src, 21);
        }
}

TEST(GradPooling, AdaptiveForwardAgainstFiniteDifferences) {
    struct Case {
        dnn::TensorShape src;
        std::vector<int32_t> shape;
    };
    // 7 -> 3 and 5 -> 3 give overlapping windows of unequal sizes; 6 -> 6 is the identity.
    std::vector<Case> cases{{{2, 2, 7, 5}, {3, 3}},
                            {{1, 3, 6, 4}, {6, 2}},
                            {{2, 2, 7}, {3}},
                            {{1, 2, 5, 3, 4}, {2, 3, 3}}};
    for (AMode mode : {AMode::MAX, AMode::AVERAGE})
        for (const auto& c : cases) {
            auto p = adaptive_param(mode, c.shape);
            SCOPED_TRACE(c.src.to_string() + " " + dnn::param::to_string(p));
            check_grad_at([&](const Tensor& x) { return adaptive_pool(p, x); },
                          distinct_values(c.src, 5), c.src, 22);
        }
}

// Second order of average pooling: the gradient of sum(r * pool(x)^2) is a PoolingBackward whose
// diff depends on x; its own gradient goes through the backward op's rule.
TEST(GradPooling, AverageSecondOrder) {
    for (PMode mode : {PMode::AVERAGE, PMode::AVERAGE_COUNT_EXCLUDE_PADDING})
        for (const auto& c : pool_cases()) {
            auto p = pool_param(mode, c.window, c.stride, c.padding);
            SCOPED_TRACE(std::string(c.name) + " " + dnn::param::to_string(p));
            Tensor probe = pool(p, make(rand_values(c.src, 1), c.src));
            Tensor r = make(rand_values(probe.shape(), 77), probe.shape());
            check_grads(
                    [&](const std::vector<Tensor>& in) {
                        auto inner = GradKey::make();
                        Tensor x = in[0];
                        inner->attach(x);
                        inner->activate();
                        Tensor y = pool(p, x);
                        Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
                        inner->deactivate();
                        std::vector<Tensor> ys{l}, wrt{x};
                        return inner->backward(ys, {}, wrt)[0];
                    },
                    {c.src}, {true}, 9);
        }
}

TEST(GradPooling, AdaptiveAverageSecondOrder) {
    auto p = adaptive_param(AMode::AVERAGE, {3, 2});
    dnn::TensorShape src{2, 2, 7, 5};
    Tensor r = make(rand_values({2, 2, 3, 2}, 78), {2, 2, 3, 2});
    check_grads(
            [&](const std::vector<Tensor>& in) {
                auto inner = GradKey::make();
                Tensor x = in[0];
                inner->attach(x);
                inner->activate();
                Tensor y = adaptive_pool(p, x);
                Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
                inner->deactivate();
                std::vector<Tensor> ys{l}, wrt{x};
                return inner->backward(ys, {}, wrt)[0];
            },
            {src}, {true}, 10);
}

// Max pooling with windows that do not overlap: the second order goes through PoolingBackward's
// rule, which picks the gradient at each window's maximum. Distinct values keep the maxima fixed
// under the central differences.
TEST(GradPooling, MaxSecondOrderWithoutOverlap) {
    std::vector<PoolCase> cases{{"2x2", {2, 2, 4, 6}, {2, 2}, {2, 2}, {0, 0}},
                                {"gaps_pad", {1, 2, 7, 5}, {2, 2}, {3, 2}, {1, 1}},
                                {"1d", {2, 3, 9}, {3}, {3}, {1}},
                                {"3d", {1, 2, 4, 3, 5}, {2, 1, 2}, {2, 1, 3}, {0, 0, 1}}};
    for (const auto& c : cases) {
        auto p = pool_param(PMode::MAX, c.window, c.stride, c.padding);
        SCOPED_TRACE(std::string(c.name) + " " + dnn::param::to_string(p));
        Tensor probe = pool(p, make(rand_values(c.src, 1), c.src));
        Tensor r = make(rand_values(probe.shape(), 79), probe.shape());
        check_grads_at(
                [&](const std::vector<Tensor>& in) {
                    auto inner = GradKey::make();
                    Tensor x = in[0];
                    inner->attach(x);
                    inner->activate();
                    Tensor y = pool(p, x);
                    Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
                    inner->deactivate();
                    std::vector<Tensor> ys{l}, wrt{x};
                    return inner->backward(ys, {}, wrt)[0];
                },
                {c.src}, {distinct_values(c.src, 4)}, {true}, 12);
    }
}

// Where windows overlap (and for adaptive max pooling) no op with a rule expresses the second
// order: differentiating again says so instead of returning a silently wrong (or missing)
// gradient.
TEST(GradPooling, MaxSecondOrderWithOverlapIsRefused) {
    auto second = [](const std::function<Tensor(const Tensor&)>& f) {
        auto outer = GradKey::make(), inner = GradKey::make();
        Tensor x = make(distinct_values({1, 1, 5, 5}, 1), {1, 1, 5, 5});
        outer->attach(x);
        inner->attach(x);
        outer->activate();
        inner->activate();
        Tensor y = f(x);
        Tensor l = ew(Mode::MUL, {y, y});
        inner->deactivate();
        std::vector<Tensor> ys{l}, wrt{x};
        Tensor g = inner->backward(ys, {}, wrt)[0];
        outer->deactivate();
        std::vector<Tensor> gs{g};
        return outer->backward(gs, {}, wrt)[0];
    };
    auto p = pool_param(PMode::MAX, {3, 3}, {2, 2}, {0, 0});
    EXPECT_THROW(second([&](const Tensor& x) { return pool(p, x); }), dnn::NotSupportedError);
    auto a = adaptive_param(AMode::MAX, {2, 2});
    EXPECT_THROW(second([&](const Tensor& x) { return adaptive_pool(a, x); }),
                 dnn::NotSupportedError);
}
