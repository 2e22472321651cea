#include <gtest/gtest.h>

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"

using namespace neomeg::dnn;

TEST(DType, SizesNamesAndCategories) {
    EXPECT_EQ(dtype::Float32.size(), 4u);
    EXPECT_EQ(dtype::Float16.size(), 2u);
    EXPECT_EQ(dtype::BFloat16.size(), 2u);
    EXPECT_EQ(dtype::Int8.size(), 1u);
    EXPECT_EQ(dtype::Int16.size(), 2u);
    EXPECT_EQ(dtype::Int32.size(), 4u);
    EXPECT_EQ(dtype::Bool.size(), 1u);
    EXPECT_STREQ(dtype::BFloat16.name(), "bfloat16");
    EXPECT_TRUE(dtype::Float16.is_float());
    EXPECT_TRUE(dtype::Uint8.is_int());
    EXPECT_FALSE(dtype::Uint8.is_signed());
    EXPECT_TRUE(dtype::Bool.is_bool());
    EXPECT_EQ(DType::from_name("int16"), dtype::Int16);
    EXPECT_THROW(DType::from_name("float64"), DTypeError);
    EXPECT_EQ(DType(), dtype::Float32);
}

TEST(DType, HalfAndBFloat16RoundTrip) {
    // Exactly representable values survive; others round to nearest even.
    EXPECT_EQ(static_cast<float>(dt_float16(1.5f)), 1.5f);
    EXPECT_EQ(static_cast<float>(dt_float16(65504.f)), 65504.f);
    EXPECT_TRUE(std::isinf(static_cast<float>(dt_float16(70000.f))));
    EXPECT_EQ(static_cast<float>(dt_float16(1.0f + 1.0f / 4096)), 1.0f);  // below half ulp
    EXPECT_EQ(static_cast<float>(dt_bfloat16(3.0f)), 3.0f);
    EXPECT_EQ(static_cast<float>(dt_bfloat16(1.0f + 1.0f / 512)), 1.0f);
    EXPECT_EQ(static_cast<float>(dt_bfloat16(1e30f)), static_cast<float>(dt_bfloat16(1e30f)));
}

// A shape whose element count would wrap size_t (or give a byte count that wraps) is an error,
// not a tensor backed by a buffer smaller than its shape; an empty dim makes any shape empty.
TEST(TensorShape, ElementCountsThatWrapAreErrors) {
    const size_t big = size_t(1) << 31;
    EXPECT_THROW(TensorShape({big, big, 4}).total_nr_elems(), ShapeError);
    EXPECT_THROW(TensorShape({size_t(1) << 62}).total_nr_elems(), ShapeError);
    EXPECT_THROW(TensorLayout({big, big}, dtype::Float32).access_bytes(), ShapeError);
    EXPECT_EQ(TensorShape({0, size_t(1) << 62, size_t(1) << 62}).total_nr_elems(), 0u);
    EXPECT_EQ(TensorShape({size_t(1) << 28, size_t(1) << 28}).total_nr_elems(), size_t(1) << 56);
}

TEST(TensorShape, BasicsAndLimits) {
    TensorShape s{2, 3, 4};
    EXPECT_EQ(s.ndim, 3u);
    EXPECT_EQ(s.total_nr_elems(), 24u);
    EXPECT_EQ(s.to_string(), "{2,3,4}");
    EXPECT_TRUE(TensorShape{}.is_scalar());
    EXPECT_EQ(TensorShape{}.total_nr_elems(), 1u);
    EXPECT_TRUE((TensorShape{2, 0}).is_empty());
    EXPECT_THROW(TensorShape(std::vector<size_t>(8, 1)), ShapeError);
}

TEST(TensorLayout, ContiguousStridesAndSpan) {
    TensorLayout l({2, 3, 4}, dtype::Float32);
    EXPECT_EQ(l.stride[0], 12);
    EXPECT_EQ(l.stride[1], 4);
    EXPECT_EQ(l.stride[2], 1);
    EXPECT_TRUE(l.is_contiguous());
    EXPECT_EQ(l.span_bytes(), 96u);
    TensorLayout neg({3}, {-2}, dtype::Int16);
    auto [lo, hi] = neg.span_elems();
    EXPECT_EQ(lo, -4);
    EXPECT_EQ(hi, 1);
    EXPECT_FALSE(neg.is_contiguous());
}

TEST(TensorLayout, CollapseMergesContiguousRuns) {
    TensorLayout l({2, 3, 4}, dtype::Float32);
    auto c = l.collapse_contiguous();
    EXPECT_EQ(c.ndim, 1u);
    EXPECT_EQ(c.shape[0], 24u);
    // a column slice: rows of 4 with stride 8 do not merge with the outer axis
    TensorLayout s({2, 3, 4}, {24, 8, 1}, dtype::Float32);
    auto cs = s.collapse_contiguous();
    EXPECT_EQ(cs.ndim, 2u);
    EXPECT_EQ(cs.shape[0], 6u);
    EXPECT_EQ(cs.stride[0], 8);
    EXPECT_EQ(cs.shape[1], 4u);
    // size-1 axes vanish
    TensorLayout o({1, 5, 1}, dtype::Float32);
    EXPECT_EQ(o.collapse_contiguous().ndim, 1u);
}

TEST(TensorLayout, BroadcastFollowsNumpy) {
    TensorLayout l({3, 1}, dtype::Float32);
    auto b = l.broadcast({2, 3, 4});
    EXPECT_EQ(b.to_string(), "{2(0),3(1),4(0)} float32");
    EXPECT_FALSE(b.is_contiguous());
    EXPECT_TRUE(b.is_physical_contiguous());
    EXPECT_THROW(l.broadcast({2, 4}), ShapeError);
    auto s = broadcast_shapes({{3, 1}, {4}, {2, 1, 1}});
    EXPECT_EQ(s.to_string(), "{2,3,4}");
    try {
        broadcast_shapes({{3}, {4}});
        FAIL();
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("{3}, {4}"), std::string::npos) << e.what();
    }
}

TEST(TensorLayout, DimshuffleAndAxes) {
    TensorLayout l({2, 3, 4}, dtype::Float32);
    auto t = l.dimshuffle({2, 0, 1});
    EXPECT_EQ(t.to_string(), "{4(1),2(12),3(4)} float32");
    EXPECT_THROW(l.dimshuffle({0, 0, 1}), ShapeError);
    EXPECT_THROW(l.dimshuffle({0, 1}), ShapeError);
    auto a = l.add_axis(1);
    EXPECT_EQ(a.to_string(), "{2(12),1(12),3(4),4(1)} float32");
    EXPECT_EQ(a.remove_axis(1).to_string(), l.to_string());
    EXPECT_THROW(l.remove_axis(0), ShapeError);
    EXPECT_THROW(l.remove_axis(5), ShapeError);
    auto e = l.add_axis(3);
    EXPECT_EQ(e.shape[3], 1u);
}

TEST(TensorLayout, ReshapeWithoutCopy) {
    TensorLayout l({2, 3, 4}, dtype::Float32);
    EXPECT_EQ(l.reshape({6, 4}).to_string(), "{6(4),4(1)} float32");
    EXPECT_EQ(l.reshape({4, 1, 6}).to_string(), "{4(6),1(6),6(1)} float32");
    // transposed: merging the two swapped axes needs a copy
    auto t = l.dimshuffle({1, 0, 2});
    TensorLayout r;
    EXPECT_FALSE(t.try_reshape(r, {6, 4}));
    EXPECT_THROW(t.reshape({6, 4}), ShapeError);
    // splitting an axis of a strided view works
    TensorLayout s({2, 6}, {12, 2}, dtype::Float32);
    EXPECT_EQ(s.reshape({2, 2, 3}).to_string(), "{2(12),2(6),3(2)} float32");
    EXPECT_THROW(l.reshape({5, 5}), ShapeError);
}
