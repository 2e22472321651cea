// Backward rules of ConvolutionForward, ConvolutionBackwardData, ConvolutionBackwardFilter and
// ConvBias against central differences of the forward ops, first and second order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "grad_check.h"
#include "neomeg/dnn/param_base.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;
using namespace neomeg::imperative::grad_check::single;

namespace {

dnn::param::Convolution conv_param(std::vector<int32_t> stride, std::vector<int32_t> padding,
                                   std::vector<int32_t> dilation, uint32_t group = 1,
                                   bool flip = false) {
    dnn::param::Convolution p;
    p.stride = std::move(stride);
    p.padding = std::move(padding);
    p.dilation = std::move(dilation);
    p.group = group;
    p.mode = flip ? dnn::param::Convolution::Mode::CONVOLUTION
                  : dnn::param::Convolution::Mode::CROSS_CORRELATION;
    return p;
}

Tensor conv(const dnn::param::Convolution& p, const Tensor& x, const Tensor& w) {
    std::vector<Tensor> in{x, w};
    return imperative::apply(ops::ConvolutionForward(p), in)[0];
}

struct ConvCase {
    const char* name;
    dnn::TensorShape src, filter;
    dnn::param::Convolution p;
};

std::vector<ConvCase> conv_cases() {
    return {
            {"plain", {2, 3, 5, 5}, {2, 3, 3, 3}, conv_param({1, 1}, {0, 0}, {1, 1})},
            // (6 + 2 - 3) / 2 floors: src 6 is not the smallest input giving the output, so the
            // gradient needs the preset shape.
            {"stride_pad_floor", {1, 2, 6, 7}, {3, 2, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {"dilation_group", {1, 4, 7, 6}, {4, 2, 2, 3}, conv_param({1, 2}, {0, 1}, {2, 1}, 2)},
            {"flipped", {1, 2, 4, 5}, {2, 2, 2, 3}, conv_param({1, 1}, {1, 0}, {1, 1}, 1, true)},
            {"1d", {2, 2, 9}, {3, 2, 3}, conv_param({2}, {1}, {2})},
            {"3d",
             {1, 2, 4, 3, 5},
             {2, 1, 2, 2, 3},
             conv_param({1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 2)},
    };
}

dnn::TensorShape dst_of(const ConvCase& c) {
    return conv(c.p, make(rand_values(c.src, 1), c.src), make(rand_values(c.filter, 2), c.filter))
            .shape();
}

}  // namespace

TEST(GradConvolution, ForwardAgainstFiniteDifferences) {
    for (const auto& c : conv_cases()) {
        SCOPED_TRACE(c.name);
        check_grads([&](const std::vector<Tensor>& x) { return conv(c.p, x[0], x[1]); },
                    {c.src, c.filter}, {true, true});
    }
}

TEST(GradConvolution, ForwardOnlyRequestedInputs) {
    auto c = conv_cases()[1];
    for (bool first : {true, false}) {
        check_grads([&](const std::vector<Tensor>& x) { return conv(c.p, x[0], x[1]); },
                    {c.src, c.filter}, {first, !first});
    }
}

TEST(GradConvolution, ForwardGradientHasThePresetShape) {
    // Stride 2 maps src widths 6 and 5 to one output width; the gradient must be of src's.
    auto p = conv_param({2, 2}, {0, 0}, {1, 1});
    auto key = GradKey::make();
    Tensor x = make(rand_values({1, 1, 6, 6}, 3), {1, 1, 6, 6});
    Tensor w = make(rand_values({1, 1, 2, 2}, 4), {1, 1, 2, 2});
    key->attach(x);
    key->activate();
    Tensor y = conv(p, x, w);
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{x};
    Tensor g = key->backward(ys, {}, wrt)[0];
    EXPECT_EQ(g.shape().to_string(), "{1,1,6,6}");
    // Every input element is in exactly one window: the gradient is the tiled filter.
    auto wv = values(w), gv = values(g);
    for (size_t i = 0; i < 6; ++i)
        for (size_t j = 0; j < 6; ++j)
            EXPECT_FLOAT_EQ(gv[i * 6 + j], wv[(i % 2) * 2 + j % 2]);
}

// conv_transpose: BD(filter, diff) with its output shape preset (output_padding in Python).
TEST(GradConvolution, BackwardDataAgainstFiniteDifferences) {
    for (const auto& c : conv_cases()) {
        SCOPED_TRACE(c.name);
        dnn::TensorShape diff = dst_of(c);
        dnn::TensorShape src = c.src;
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return imperative::apply(ops::ConvolutionBackwardData(c.p), x, {&src, 1})[0];
                },
                {c.filter, diff}, {true, true});
    }
}

TEST(GradConvolution, BackwardFilterAgainstFiniteDifferences) {
    for (const auto& c : conv_cases()) {
        SCOPED_TRACE(c.name);
        dnn::TensorShape diff = dst_of(c);
        dnn::TensorShape filter = c.filter;
        check_grads(
                [&](const std::vector<Tensor>& x) {
                    return imperative::apply(ops::ConvolutionBackwardFilter(c.p), x,
                                             {&filter, 1})[0];
                },
                {c.src, diff}, {true, true});
    }
}

// Second order: the gradient of sum(r * conv(x, w)^2) with respect to x (a BackwardData of
// a diff that depends on x and w) and to w (a BackwardFilter), differentiated again in x and w.
TEST(GradConvolution, SecondOrderAgainstFiniteDifferencesOfTheGradient) {
    for (size_t which : {0u, 1u}) {
        for (const auto& c : conv_cases()) {
            SCOPED_TRACE(std::string(c.name) + (which ? " d/dw" : " d/dx"));
            dnn::TensorShape dst = dst_of(c);
            Tensor r = make(rand_values(dst, 99), dst);
            check_grads(
                    [&](const std::vector<Tensor>& in) {
                        auto inner = GradKey::make();
                        std::vector<Tensor> x = in;
                        inner->attach(x[0]);
                        inner->attach(x[1]);
                        inner->activate();
                        Tensor y = conv(c.p, x[0], x[1]);
                        Tensor l = ew(Mode::MUL, {ew(Mode::MUL, {y, y}), r});
                        inner->deactivate();
                        std::vector<Tensor> ys{l}, wrt{x[which]};
                        return inner->backward(ys, {}, wrt)[0];
                    },
                    {c.src, c.filter}, {true, true}, 5, 0.5f);
        }
    }
}

namespace {

dnn::param::ConvBias conv_bias_param(dnn::param::ConvBias::NonlineMode nonline,
                                     const dnn::param::Convolution& c) {
    dnn::param::ConvBias p;
    p.nonlineMode = nonline;
    p.mode = static_cast<dnn::param::ConvBias::Mode>(c.mode);
    p.stride = c.stride;
    p.padding = c.padding;
    p.dilation = c.dilation;
    p.group = c.group;
    return p;
}

}  // namespace

TEST(GradConvolution, ConvBiasAgainstFiniteDifferences) {
    using NL = dnn::param::ConvBias::NonlineMode;
    auto c = conv_cases()[2];  // dilation, stride and groups
    dnn::TensorShape dst = dst_of(c);
    dnn::TensorShape per_channel{1, dst[1], 1, 1}, per_column{1, 1, 1, dst[3]};
    for (const auto& bias : {per_channel, per_column, dst}) {
        std::vector<dnn::TensorShape> shapes{c.src, c.filter, bias, dst};
        std::vector<std::vector<float>> xv;
        for (uint32_t i = 0; i < 3; ++i)
            xv.push_back(rand_values(shapes[i], 7 + i, 0.5f));
        // z puts every pre-activation sum at +-[0.5, 1]: no central difference crosses RELU's
        // kink at 0 or H_SWISH's at +-3.
        dnn::param::ConvBias id = conv_bias_param(NL::IDENTITY, c.p);
        std::vector<Tensor> no_z{make(xv[0], c.src), make(xv[1], c.filter), make(xv[2], bias),
                                 Tensor::empty(dnn::TensorShape{}, dnn::dtype::Float32, cpu())};
        std::vector<float> sum = values(imperative::apply(ops::ConvBias(id), no_z)[0]);
        std::vector<float> target = rand_values(dst, 10);
        std::vector<float> z(sum.size());
        for (size_t k = 0; k < z.size(); ++k)
            z[k] = std::copysign(0.5f + 0.5f * std::abs(target[k]), target[k]) - sum[k];
        xv.push_back(z);
        for (NL nl : {NL::IDENTITY, NL::RELU, NL::SIGMOID, NL::H_SWISH}) {
            auto p = conv_bias_param(nl, c.p);
            SCOPED_TRACE(bias.to_string() + " " + dnn::param::to_string(p));
            check_grads_at(
                    [&](const std::vector<Tensor>& x) {
                        return imperative::apply(ops::ConvBias(p), x)[0];
                    },
                    shapes, xv, {true, true, true, true}, 7);
        }
    }
}

TEST(GradConvolution, ConvBiasAbsentBiasAndZGetNoGradient) {
    using NL = dnn::param::ConvBias::NonlineMode;
    auto c = conv_cases()[0];
    auto p = conv_bias_param(NL::SIGMOID, c.p);
    auto absent = [] { return Tensor::empty(dnn::TensorShape{}, dnn::dtype::Float32, cpu()); };
    auto f = [&](const std::vector<Tensor>& x) {
        std::vector<Tensor> in{x[0], x[1], absent(), absent()};
        return imperative::apply(ops::ConvBias(p), in)[0];
    };
    check_grads(f, {c.src, c.filter}, {true, true}, 3, 0.5f);

    auto key = GradKey::make();
    std::vector<Tensor> in{make(rand_values(c.src, 1), c.src),
                           make(rand_values(c.filter, 2), c.filter), absent(), absent()};
    for (auto& t : in)
        key->attach(t);
    key->activate();
    Tensor y = imperative::apply(ops::ConvBias(p), in)[0];
    key->deactivate();
    std::vector<Tensor> ys{y};
    auto g = key->backward(ys, {}, in);
    EXPECT_TRUE(g[0].valid() && g[1].valid());
    EXPECT_FALSE(g[2].valid());
    EXPECT_FALSE(g[3].valid());
}

// Second order through ConvBias: its rule composes an elemwise gradient mode, BackwardData and
// BackwardFilter, which have rules.
TEST(GradConvolution, ConvBiasSecondOrder) {
    using NL = dnn::param::ConvBias::NonlineMode;
    auto c = conv_cases()[1];
    dnn::TensorShape dst = dst_of(c);
    dnn::TensorShape bias{1, dst[1], 1, 1};
    for (NL nl : {NL::IDENTITY, NL::SIGMOID, NL::H_SWISH})
        for (size_t which : {0u, 1u}) {
            auto p = conv_bias_param(nl, c.p);
            SCOPED_TRACE(dnn::param::to_string(p) + (which ? " d/dfilter" : " d/dsrc"));
            // An IDENTITY ConvBias is bilinear: d/dsrc depends on the filter only and vice versa.
            std::vector<bool> wrt{true, true, true, true};
            if (nl == NL::IDENTITY)
                wrt = {which == 1, which == 0, false, false};
            auto first = [&](const std::vector<Tensor>& in) {
                auto inner = GradKey::make();
                std::vector<Tensor> x = in;
                for (auto& t : x)
                    inner->attach(t);
                inner->activate();
                Tensor y = imperative::apply(ops::ConvBias(p), x)[0];
                inner->deactivate();
                std::vector<Tensor> ys{y}, target{x[which]};
                return inner->backward(ys, {}, target)[0];
            };
            check_grads(first, {c.src, c.filter, bias, dst}, wrt, 11, 0.5f);
        }
}

// The preset output shape the rules rely on reaches the layout rule, which checks it.
TEST(GradConvolution, PresetShapeIsCheckedByTheLayoutRule) {
    auto p = conv_param({2, 2}, {0, 0}, {1, 1});
    std::vector<Tensor> in{make(rand_values({1, 1, 2, 2}, 1), {1, 1, 2, 2}),
                           make(rand_values({1, 1, 3, 3}, 2), {1, 1, 3, 3})};
    for (size_t good : {6u, 7u}) {  // both floor to an output of 3
        dnn::TensorShape s{1, 1, good, good};
        EXPECT_EQ(imperative::apply(ops::ConvolutionBackwardData(p), in, {&s, 1})[0]
                          .shape()
                          .to_string(),
                  s.to_string());
    }
    dnn::TensorShape bad{1, 1, 8, 8};
    EXPECT_THROW(imperative::apply(ops::ConvolutionBackwardData(p), in, {&bad, 1}),
                 dnn::ShapeError);
    std::vector<dnn::TensorShape> two{bad, bad};
    EXPECT_THROW(imperative::apply(ops::ConvolutionBackwardData(p), in, two), dnn::ParamError);
    param::Reshape r;
    r.shape = {4};
    EXPECT_THROW(imperative::apply(ops::Reshape(r), {&in[0], 1}, {&bad, 1}), dnn::ParamError);
}
