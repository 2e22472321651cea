// Backward rules of grad_rules/tensor.cpp (Concat, Split, Padding, Resize, Roll, Diag, Relayout)
// against central differences; the backward ops' own rules through second derivatives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;

namespace {

std::vector<float> ramp(size_t n, float scale = 0.37f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::sin(static_cast<float>(i) * 1.7f + 0.3f) * 2.f +
               static_cast<float>(i) * scale * 0.1f;
    return v;
}

}  // namespace

TEST(GradTensor, ConcatAlongEachAxis) {
    for (int32_t axis : {0, 1, -1}) {
        dnn::param::Concat p;
        p.axis = axis;
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Concat>(p, x); };
        dnn::TensorShape a{2, 3}, b = a, c = a;
        size_t ax = axis < 0 ? 1 : static_cast<size_t>(axis);
        b[ax] = 1;
        c[ax] = 2;
        check_grad(f,
                   {{ramp(6), a},
                    {ramp(b.total_nr_elems(), 1.f), b},
                    {ramp(c.total_nr_elems(), 2.f), c}},
                   1e-3f, 1e-2f, "Concat axis " + std::to_string(axis));
    }
}

TEST(GradTensor, SplitWithUnusedOutputs) {
    dnn::param::Split p;
    p.axis = -1;
    p.sizes = {1, 3, 0, 2};
    Fn all = [&](const std::vector<Tensor>& x) { return run<ops::Split>(p, x); };
    check_grad(all, {{ramp(12), {2, 6}}}, 1e-3f, 1e-2f, "Split all outputs");
    // Only the second piece used: the others get zeros from the tape.
    Fn one = [&](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{run<ops::Split>(p, x)[1]};
    };
    check_grad(one, {{ramp(12), {2, 6}}}, 1e-3f, 1e-2f, "Split one output");
    p.axis = 0;
    p.sizes = {2, 1};
    check_grad(all, {{ramp(12), {3, 4}}}, 1e-3f, 1e-2f, "Split axis 0");
}

TEST(GradTensor, PaddingInEveryMode) {
    using PMode = dnn::param::Padding::Mode;
    for (PMode m : {PMode::CONSTANT, PMode::REFLECT, PMode::REPLICATE}) {
        dnn::param::Padding p;
        p.mode = m;
        p.value = 1.5f;
        p.front_offsets = {1, 2};
        p.back_offsets = {2, 1};
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Padding>(p, x); };
        check_grad(f, {{ramp(12), {3, 4}}}, 1e-3f, 1e-2f, ops::Padding(p).to_string());
        // PaddingBackward's own rule, as a function of diff, and through a second derivative.
        Fn back = [&](const std::vector<Tensor>& x) { return run<ops::PaddingBackward>(p, x); };
        check_grad(back, {{ramp(42), {6, 7}}}, 1e-3f, 1e-2f, "PaddingBackward");
        Fn prod = [&](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{ew(Mode::MUL, {run<ops::Padding>(p, {x[0]})[0], x[1]})};
        };
        check_second(prod, {{ramp(12), {3, 4}}, {ramp(42, 1.f), {6, 7}}}, 1e-2f, 1e-2f,
                     "Padding second order");
    }
}

TEST(GradTensor, ResizeInEveryModeAndBackwardSecondOrder) {
    using IMode = dnn::param::Resize::InterpolationMode;
    struct Case {
        IMode mode;
        bool align;
        uint32_t h, w;
    };
    for (Case c : {Case{IMode::LINEAR, false, 5, 7}, Case{IMode::LINEAR, true, 5, 3},
                   Case{IMode::LINEAR, false, 2, 3}, Case{IMode::NEAREST, false, 6, 2}}) {
        dnn::param::Resize p;
        p.mode = c.mode;
        p.align_corners = c.align;
        p.out_h = c.h;
        p.out_w = c.w;
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Resize>(p, x); };
        check_grad(f, {{ramp(24), {1, 2, 3, 4}}}, 1e-3f, 1e-2f, ops::Resize(p).to_string());
        // Second order goes through ResizeBackward's rule (its gradient w.r.t. diff is Resize).
        Fn prod = [&](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{ew(Mode::MUL, {run<ops::Resize>(p, {x[0]})[0], x[1]})};
        };
        size_t n = 2 * c.h * c.w;
        check_second(prod, {{ramp(24), {1, 2, 3, 4}}, {ramp(n, 1.f), {1, 2, c.h, c.w}}}, 1e-2f,
                     1e-2f, "Resize second order");
    }
}

TEST(GradTensor, RollBackByEveryShift) {
    for (auto [shift, axis] :
         std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>{{{1}, {1}},
                                                                            {{-2}, {0}},
                                                                            {{7}, {-1}},
                                                                            {{1, -1}, {0, 1}},
                                                                            {{2, 2}, {1, 1}},
                                                                            {{INT32_MIN}, {1}},
                                                                            {{3}, {0}}}) {
        dnn::param::Roll p;
        p.shift = shift;
        p.axis = axis;
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Roll>(p, x); };
        check_grad(f, {{ramp(12), {3, 4}}}, 1e-3f, 1e-2f, ops::Roll(p).to_string());
        check_second(
                [&](const std::vector<Tensor>& x) {
                    return std::vector<Tensor>{ew(Mode::MUL, {run<ops::Roll>(p, {x[0]})[0], x[1]})};
                },
                {{ramp(12), {3, 4}}, {ramp(12, 1.f), {3, 4}}}, 1e-2f, 1e-2f, "Roll second order");
    }
}

TEST(GradTensor, DiagBothWaysAndEveryOffset) {
    for (int32_t k : {0, 2, -1}) {
        dnn::param::Diag p;
        p.k = k;
        Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Diag>(p, x); };
        check_grad(f, {{ramp(3), {3}}}, 1e-3f, 1e-2f, "Diag 1-D k " + std::to_string(k));
    }
    // 2-D sources: wide, tall, and offsets that need cropping or padding of the square.
    for (auto [r, c] : {std::pair<size_t, size_t>{3, 5}, {5, 3}, {4, 4}})
        for (int32_t k : {0, 1, 3, -2, -4}) {
            dnn::param::Diag p;
            p.k = k;
            Fn f = [&](const std::vector<Tensor>& x) { return run<ops::Diag>(p, x); };
            check_grad(f, {{ramp(r * c), {r, c}}}, 1e-3f, 1e-2f,
                       "Diag " + std::to_string(r) + "x" + std::to_string(c) + " k " +
                               std::to_string(k));
            check_second(
                    [&](const std::vector<Tensor>& x) {
                        return std::vector<Tensor>{
                                ew(Mode::MUL, {run<ops::Diag>(p, {x[0]})[0], x[1]})};
                    },
                    {{ramp(r * c), {r, c}},
                     {ramp(run<ops::Diag>(p, {make(ramp(r * c), {r, c})})[0]
                                   .shape()
                                   .total_nr_elems(),
                           1.f),
                      run<ops::Diag>(p, {make(ramp(r * c), {r, c})})[0].shape()}},
                    1e-2f, 1e-2f, "Diag second order");
        }
}

TEST(GradTensor, RelayoutIsIdentity) {
    Fn f = [](const std::vector<Tensor>& x) {
        param::Dimshuffle d;
        d.pattern = {1, 0};
        Tensor t = imperative::apply(ops::Dimshuffle(d), {&x[0], 1})[0];  // strided view
        Tensor c = run<ops::Relayout>({}, {t})[0];
        return std::vector<Tensor>{ew(Mode::MUL, {c, c})};
    };
    check_grad(f, {{ramp(6), {2, 3}}}, 1e-3f, 1e-2f, "Relayout");
}
