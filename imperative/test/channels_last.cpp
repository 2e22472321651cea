// The eager runtime's channels-last rule (dnn_exec.cpp): an output whose definition follows an
// input (layout_follows) is allocated channels-last when that input is, with the same values as
// the contiguous run; every other output stays contiguous.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "grad_check.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/tensor_basic.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

namespace {

using grad_check::values;

Tensor iota(const dnn::TensorShape& s, float scale) {
    std::vector<float> v(s.total_nr_elems());
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11) * scale;
    return Tensor::from_host(v.data(), s, dnn::dtype::Float32, CompNode::load("cpu0"));
}

// The NHWC-ordered view copied dense, seen in NCHW order again.
Tensor channels_last(const Tensor& t) {
    auto nhwc = t.view(t.layout().dimshuffle({0, 2, 3, 1}));
    auto dense = imperative::apply(ops::Relayout(), {&nhwc, 1})[0];
    return dense.view(dense.layout().dimshuffle({0, 3, 1, 2}));
}

dnn::param::Elemwise elemwise(dnn::param::Elemwise::Mode m) {
    dnn::param::Elemwise p;
    p.mode = m;
    return p;
}

}  // namespace

TEST(ChannelsLast, FollowingOutputsKeepTheLayout) {
    auto x = iota({2, 3, 5, 4}, 0.25f);
    auto xc = channels_last(x);
    ASSERT_TRUE(dnn::is_channels_last(xc.layout()));
    EXPECT_EQ(values(xc), values(x));

    using Mode = dnn::param::Elemwise::Mode;
    auto relu = imperative::apply(ops::Elemwise(elemwise(Mode::RELU)), {&xc, 1})[0];
    EXPECT_TRUE(dnn::is_channels_last(relu.layout())) << relu.layout().to_string();
    EXPECT_EQ(values(relu),
              values(imperative::apply(ops::Elemwise(elemwise(Mode::RELU)), {&x, 1})[0]));

    auto w = iota({6, 3, 3, 3}, 0.5f);
    dnn::param::Convolution cp;
    cp.padding = {1, 1};
    std::vector<Tensor> in_cl{xc, w}, in{x, w};
    auto y = imperative::apply(ops::ConvolutionForward(cp), in_cl)[0];
    EXPECT_TRUE(dnn::is_channels_last(y.layout())) << y.layout().to_string();
    auto want = values(imperative::apply(ops::ConvolutionForward(cp), in)[0]);
    auto got = values(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-4f * std::max(1.f, std::abs(want[i]))) << i;

    // a per-channel operand broadcasts without changing the format
    auto b = iota({1, 3, 1, 1}, 1.f);
    std::vector<Tensor> add{xc, b};
    EXPECT_TRUE(dnn::is_channels_last(
            imperative::apply(ops::Elemwise(elemwise(Mode::ADD)), add)[0].layout()));
}

TEST(ChannelsLast, OtherOutputsAreContiguous) {
    auto x = iota({2, 3, 5, 4}, 0.5f);
    auto xc = channels_last(x);
    using Mode = dnn::param::Elemwise::Mode;
    // a row-major and a channels-last operand of dst's shape: channels-last, the values right
    std::vector<Tensor> mixed{x, xc};
    auto sum = imperative::apply(ops::Elemwise(elemwise(Mode::ADD)), mixed)[0];
    EXPECT_TRUE(dnn::is_channels_last(sum.layout()));
    auto twice = values(x);
    for (float& v : twice)
        v *= 2;
    EXPECT_EQ(values(sum), twice);
    // an operator without layout_follows: Relayout makes row-major tensors
    auto r = imperative::apply(ops::Relayout(), {&xc, 1})[0];
    EXPECT_TRUE(r.layout().is_contiguous());
    EXPECT_EQ(values(r), values(x));
}

TEST(ChannelsLast, EmptyDenseRefusesGapsAndOverlaps) {
    auto cn = CompNode::load("cpu0");
    auto l = dnn::channels_last_layout({2, 3, 4, 5}, dnn::dtype::Float32);
    EXPECT_TRUE(dnn::is_channels_last(Tensor::empty_dense(l, cn).layout()));
    dnn::TensorLayout gaps({2, 3}, {4, 1}, dnn::dtype::Float32);
    EXPECT_THROW(Tensor::empty_dense(gaps, cn), dnn::ShapeError);
    dnn::TensorLayout overlap({2, 3}, {1, 1}, dnn::dtype::Float32);
    EXPECT_THROW(Tensor::empty_dense(overlap, cn), dnn::ShapeError);
}

// Autocast's channels-last casts are the runtime's choice (Tensor.format stays "default"): an
// output that follows channels-last inputs is the runtime's when every one of them is; a view
// keeps the mark, and a row-major output never has it.
TEST(ChannelsLast, TheRuntimesChoiceFollowsOnlyWhenEveryInputIsTheRuntimes) {
    using Mode = dnn::param::Elemwise::Mode;
    auto x = iota({2, 3, 5, 4}, 0.25f);
    auto automatic = channels_last(x), program = channels_last(x);
    automatic.set_auto_layout(true);
    auto relu = imperative::apply(ops::Elemwise(elemwise(Mode::RELU)), {&automatic, 1})[0];
    EXPECT_TRUE(dnn::is_channels_last(relu.layout()) && relu.auto_layout());
    EXPECT_TRUE(relu.view(relu.layout()).auto_layout());
    // with a row-major operand beside it: still only runtime-chosen channels-last inputs
    std::vector<Tensor> with_row_major{automatic, x}, with_program{automatic, program};
    EXPECT_TRUE(
            imperative::apply(ops::Elemwise(elemwise(Mode::ADD)), with_row_major)[0].auto_layout());
    auto mixed = imperative::apply(ops::Elemwise(elemwise(Mode::ADD)), with_program)[0];
    EXPECT_TRUE(dnn::is_channels_last(mixed.layout()));
    EXPECT_FALSE(mixed.auto_layout());
    EXPECT_FALSE(imperative::apply(ops::Relayout(), {&automatic, 1})[0].auto_layout());
}

// A row-major tensor's gradient is row-major even when the ops computed it channels-last: the
// filter gradient follows its channels-last src, the bias gradient the channels-last dy.
TEST(ChannelsLast, GradientsOfRowMajorTensorsAreRowMajor) {
    auto x = iota({2, 3, 5, 4}, 0.25f);
    auto xc = channels_last(x);
    auto w = iota({4, 3, 3, 3}, 0.5f), b = iota({1, 4, 1, 1}, 1.f);
    dnn::param::Convolution cp;
    cp.padding = {1, 1};
    using Mode = dnn::param::Elemwise::Mode;
    auto grads = [&](Tensor src) {
        auto key = GradKey::make();
        key->attach(src);
        key->attach(w);
        key->attach(b);
        key->activate();
        std::vector<Tensor> in{src, w};
        auto y = imperative::apply(ops::ConvolutionForward(cp), in)[0];
        std::vector<Tensor> add{y, b};
        y = imperative::apply(ops::Elemwise(elemwise(Mode::ADD)), add)[0];
        key->deactivate();
        std::vector<Tensor> ys{y}, wrt{src, w, b};
        std::vector<Tensor> ready(3);
        auto got = key->backward(ys, {}, wrt, [&](size_t i, const Tensor& g) { ready[i] = g; });
        for (size_t i = 0; i < 3; ++i)
            EXPECT_EQ(got[i].layout().to_string(), ready[i].layout().to_string()) << i;
        return got;
    };
    auto row = grads(x), last = grads(xc);
    for (size_t i = 1; i < 3; ++i) {
        EXPECT_TRUE(last[i].layout().is_contiguous()) << i;
        EXPECT_FALSE(dnn::is_channels_last(last[i].layout())) << last[i].layout().to_string();
        auto want = values(row[i]), got = values(last[i]);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k)
            EXPECT_NEAR(got[k], want[k], 1e-3f * std::max(1.f, std::abs(want[k]))) << i << " " << k;
    }
}
