// channels_last.h: the layout, its test, and the eager runtime's rule that reads the operator
// definitions (layout_follows).
#include <gtest/gtest.h>

#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/layout_follows.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"

using namespace neomeg::dnn;

namespace {
TensorLayout f32(const TensorShape& s) {
    return TensorLayout(s, dtype::Float32);
}
std::vector<ptrdiff_t> strides(const TensorLayout& l) {
    return {l.stride.begin(), l.stride.begin() + l.ndim};
}
}  // namespace

TEST(ChannelsLast, LayoutStrides) {
    auto l = channels_last_layout({2, 3, 4, 5}, dtype::Float32);
    EXPECT_EQ(strides(l), (std::vector<ptrdiff_t>{60, 1, 15, 3}));
    EXPECT_TRUE(l.eq_shape(TensorShape{2, 3, 4, 5}));
    auto v = channels_last_layout({2, 3, 4, 5, 6}, dtype::Float16);
    EXPECT_EQ(strides(v), (std::vector<ptrdiff_t>{360, 1, 90, 18, 3}));
    EXPECT_EQ(v.dtype, dtype::Float16);
    EXPECT_THROW(channels_last_layout({2, 3, 4}, dtype::Float32), ShapeError);
}

TEST(ChannelsLast, TheFormatIsInTheStrides) {
    EXPECT_TRUE(is_channels_last(channels_last_layout({2, 3, 4, 5}, dtype::Float32)));
    EXPECT_FALSE(is_channels_last(f32({2, 3, 4, 5})));
    EXPECT_FALSE(is_channels_last(f32({2, 3, 4})));
    // (N, C, 1, 1): the same memory either way; the strides say which it was made as
    EXPECT_TRUE(is_channels_last(channels_last_layout({2, 3, 1, 1}, dtype::Float32)));
    EXPECT_FALSE(is_channels_last(f32({2, 3, 1, 1})));
    // (N, 1, 1, 1): identical strides, so never channels-last
    EXPECT_FALSE(is_channels_last(channels_last_layout({2, 1, 1, 1}, dtype::Float32)));
    // NHWC memory seen in NCHW order is; another transpose is not; a slice along H loses density
    EXPECT_TRUE(is_channels_last(f32({2, 4, 5, 3}).dimshuffle({0, 3, 1, 2})));
    EXPECT_FALSE(is_channels_last(f32({2, 3, 5, 4}).dimshuffle({0, 1, 3, 2})));
    TensorLayout sliced = channels_last_layout({2, 3, 4, 5}, dtype::Float32);
    sliced[2] = 2;
    EXPECT_FALSE(is_channels_last(sliced));
}

TEST(ChannelsLast, OutputsFollowTheDefinitions) {
    auto cl = channels_last_layout({2, 3, 8, 8}, dtype::Float32);
    auto filter = f32({4, 3, 3, 3});
    // ConvolutionForward: dst follows src (not the filter)
    std::vector<TensorLayout> out{f32({2, 4, 6, 6})};
    apply_layout_follows(OpType::ConvolutionForward, std::vector{cl, filter}, out);
    EXPECT_TRUE(is_channels_last(out[0]));
    out = {f32({2, 4, 6, 6})};
    apply_layout_follows(OpType::ConvolutionForward,
                         std::vector{f32({2, 3, 8, 8}), channels_last_layout(filter, filter.dtype)},
                         out);
    EXPECT_TRUE(out[0].is_contiguous());
    // Elemwise: every operand of dst's shape; broadcast ones do not count
    auto bias = f32({1, 3, 1, 1});
    out = {f32({2, 3, 8, 8})};
    apply_layout_follows(OpType::Elemwise, std::vector{bias, cl}, out);
    EXPECT_TRUE(is_channels_last(out[0]));
    // channels-last wins over row-major, in either order
    out = {f32({2, 3, 8, 8})};
    apply_layout_follows(OpType::Elemwise, std::vector{f32({2, 3, 8, 8}), cl}, out);
    EXPECT_TRUE(is_channels_last(out[0]));
    out = {f32({2, 3, 8, 8})};
    apply_layout_follows(OpType::Elemwise, std::vector{bias, f32({2, 3, 8, 8})}, out);
    EXPECT_TRUE(out[0].is_contiguous());
    // (N, C, 1, 1) row-major is the same memory as channels-last: it agrees
    auto pc = f32({2, 3, 1, 1});
    out = {pc};
    apply_layout_follows(OpType::Elemwise, std::vector{channels_last_layout(pc, pc.dtype), pc},
                         out);
    EXPECT_TRUE(is_channels_last(out[0]));
    // a broadcast view of dst's shape (an eager BroadcastTo) counts as broadcast
    out = {f32({2, 3, 8, 8})};
    apply_layout_follows(OpType::Elemwise, std::vector{cl, bias.broadcast({2, 3, 8, 8})}, out);
    EXPECT_TRUE(is_channels_last(out[0]));
    // BatchNormForward: dst only, not the statistics
    std::vector<TensorLayout> bn{f32({2, 3, 8, 8}), bias, bias, bias, bias};
    apply_layout_follows(OpType::BatchNormForward, std::vector{cl, bias, bias, bias, bias}, bn);
    EXPECT_TRUE(is_channels_last(bn[0]));
    for (size_t i = 1; i < bn.size(); ++i)
        EXPECT_TRUE(bn[i].is_contiguous()) << i;
    // an operator without layout_follows, and an output of another rank
    out = {f32({2, 3, 8, 8})};
    apply_layout_follows(OpType::Relayout, std::vector{cl}, out);
    EXPECT_TRUE(out[0].is_contiguous());
    EXPECT_EQ(layout_follows(OpType::MatrixMul, 0), kFollowsNothing);
    EXPECT_EQ(layout_follows(OpType::Reduce, 0), 0);
    EXPECT_EQ(layout_follows(OpType::ConvolutionBackwardData, 0), 1);  // grad <- diff
    EXPECT_EQ(layout_follows(OpType::Elemwise, 0), kFollowsEveryInput);
}

// The naive kernels honour output strides, so a channels-last dst holds the same values.
TEST(ChannelsLast, NaiveWritesChannelsLastOutputs) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Elemwise>();
    op->param().mode = param::Elemwise::Mode::NEGATE;
    TensorShape s{2, 3, 2, 2};
    std::vector<float> src(24), dst(24, 0.f);
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<float>(i);
    auto out_l = channels_last_layout(s, dtype::Float32);
    std::vector<TensorND> in{TensorND{src.data(), f32(s)}};
    std::vector<TensorND> out{TensorND{dst.data(), out_l}};
    op->exec(in, out, {});
    // element (n, c, h, w) sits at n*12 + h*6 + w*3 + c
    for (size_t n = 0; n < 2; ++n)
        for (size_t c = 0; c < 3; ++c)
            for (size_t y = 0; y < 2; ++y)
                for (size_t x = 0; x < 2; ++x)
                    EXPECT_EQ(dst[n * 12 + y * 6 + x * 3 + c], -src[((n * 3 + c) * 2 + y) * 2 + x]);
}
