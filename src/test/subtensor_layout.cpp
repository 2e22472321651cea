// Subtensor's layout rule (src/op/view_layouts.cpp): shapes, strides and offsets of basic
// indexing against NumPy's (values worked out by hand and with Python's slice.indices), negative
// steps, empty and clamped slices, and the errors of bad params.
#include <gtest/gtest.h>

#include <vector>

#include "neomeg/op/view_layouts.h"

using namespace neomeg;
using dnn::TensorLayout;

namespace {

constexpr int32_t N = param::kSubtensorNone;

struct Item {
    int32_t axis, begin, end, step;
    bool index;
};

ops::Subtensor subtensor(const std::vector<Item>& items) {
    param::Subtensor p;
    for (const Item& it : items) {
        p.axis.push_back(it.axis);
        p.begin.push_back(it.begin);
        p.end.push_back(it.end);
        p.step.push_back(it.step);
        p.is_index.push_back(it.index ? 1 : 0);
    }
    return ops::Subtensor(p);
}

Item slice(int32_t axis, int32_t begin, int32_t end, int32_t step = N) {
    return {axis, begin, end, step, false};
}

Item index(int32_t axis, int32_t k) {
    return {axis, k, N, N, true};
}

ViewLayout view(const std::vector<Item>& items, const TensorLayout& src) {
    auto v = subtensor(items).view_layout(src);
    EXPECT_TRUE(v.has_value());  // every strided input has a view
    return *v;
}

void expect_view(const ViewLayout& v, const std::vector<size_t>& shape,
                 const std::vector<ptrdiff_t>& stride, ptrdiff_t offset) {
    ASSERT_EQ(v.layout.ndim, shape.size()) << v.layout.to_string();
    for (size_t i = 0; i < shape.size(); ++i) {
        EXPECT_EQ(v.layout.shape[i], shape[i]) << v.layout.to_string() << " axis " << i;
        if (shape[i] > 1) {
            EXPECT_EQ(v.layout.stride[i], stride[i]) << v.layout.to_string() << " axis " << i;
        }
    }
    EXPECT_EQ(v.offset, offset) << v.layout.to_string();
}

const TensorLayout k4x5({4, 5}, dnn::dtype::Float32);

}  // namespace

TEST(SubtensorLayout, IndicesDropTheirAxisAtTheirOffset) {
    expect_view(view({index(0, 2)}, k4x5), {5}, {1}, 10);             // x[2]
    expect_view(view({index(0, -1)}, k4x5), {5}, {1}, 15);            // x[-1]
    expect_view(view({index(1, 3)}, k4x5), {4}, {5}, 3);              // x[:, 3]
    expect_view(view({index(0, 1), index(1, -2)}, k4x5), {}, {}, 8);  // x[1, -2]: 0-d
    expect_view(view({index(-1, 0)}, k4x5), {4}, {5}, 0);             // negative axis
}

TEST(SubtensorLayout, SlicesOfEveryStepSign) {
    expect_view(view({slice(0, 1, 3)}, k4x5), {2, 5}, {5, 1}, 5);         // x[1:3]
    expect_view(view({slice(1, N, N, 2)}, k4x5), {4, 3}, {5, 2}, 0);      // x[:, ::2]
    expect_view(view({slice(1, N, N, -1)}, k4x5), {4, 5}, {5, -1}, 4);    // x[:, ::-1]
    expect_view(view({slice(0, N, N, -3)}, k4x5), {2, 5}, {-15, 1}, 15);  // rows 3, 0
    expect_view(view({slice(1, 3, 0, -2)}, k4x5), {4, 2}, {5, -2}, 3);    // x[:, 3:0:-2]
    expect_view(view({slice(1, -1, -6, -1)}, k4x5), {4, 5}, {5, -1}, 4);  // -6 clamps to -1
    expect_view(view({slice(0, -100, 100)}, k4x5), {4, 5}, {5, 1}, 0);    // clamped both ends
    expect_view(view({slice(0, 100, -100, -1)}, k4x5), {4, 5}, {-5, 1}, 15);
    // x[1, ::-2] on a transposed input: strides are the input's, offsets too.
    TensorLayout t = k4x5.dimshuffle({1, 0});  // {5,4} strides {1,5}
    expect_view(view({index(0, 1), slice(1, N, N, -2)}, t), {2}, {-10}, 1 + 15);
}

TEST(SubtensorLayout, EmptySlicesStayInsideTheInput) {
    for (auto items : std::vector<std::vector<Item>>{{slice(0, 2, 2)},
                                                     {slice(0, 10, N)},
                                                     {slice(0, 3, 1)},
                                                     {slice(0, 1, 3, -1)},
                                                     {slice(0, -100, -50)}}) {
        auto v = view(items, k4x5);
        EXPECT_EQ(v.layout.shape[0], 0u) << subtensor(items).to_string();
        EXPECT_EQ(v.offset, 0) << subtensor(items).to_string();
    }
    // An empty input: any slice of it is empty, an index of it is out of range.
    TensorLayout e({0, 3}, dnn::dtype::Float32);
    expect_view(view({slice(0, N, N, -1), index(1, 2)}, e), {0}, {5}, 2);
    EXPECT_THROW(subtensor({index(0, 0)}).view_layout(e), dnn::IndexError);
}

TEST(SubtensorLayout, NoItemsIsTheInput) {
    expect_view(view({}, k4x5), {4, 5}, {5, 1}, 0);
    TensorLayout scalar(dnn::TensorShape{}, dnn::dtype::Float32);
    expect_view(view({}, scalar), {}, {}, 0);
}

TEST(SubtensorLayout, BadParamsAreErrorsNamingTheOp) {
    EXPECT_THROW(subtensor({index(0, 4)}).view_layout(k4x5), dnn::IndexError);
    EXPECT_THROW(subtensor({index(0, -5)}).view_layout(k4x5), dnn::IndexError);
    EXPECT_THROW(subtensor({slice(0, N, N, 0)}).view_layout(k4x5), dnn::ParamError);
    EXPECT_THROW(subtensor({index(0, 1), slice(-2, 0, 1)}).view_layout(k4x5), dnn::ParamError);
    EXPECT_THROW(subtensor({slice(2, 0, 1)}).view_layout(k4x5), dnn::ParamError);
    EXPECT_THROW(subtensor({slice(-3, 0, 1)}).view_layout(k4x5), dnn::ParamError);
    EXPECT_THROW(subtensor({{0, 1, 2, N, true}}).view_layout(k4x5), dnn::ParamError);
    EXPECT_THROW(subtensor({{0, N, N, N, true}}).view_layout(k4x5), dnn::ParamError);
    param::Subtensor ragged;
    ragged.axis = {0};
    EXPECT_THROW(ops::Subtensor(ragged).view_layout(k4x5), dnn::ParamError);
    param::Subtensor flag = subtensor({index(0, 1)}).param();
    flag.is_index = {2};
    EXPECT_THROW(ops::Subtensor(flag).view_layout(k4x5), dnn::ParamError);
    try {
        subtensor({index(1, 7)}).view_layout(k4x5);
        FAIL() << "no error";
    } catch (const dnn::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("Subtensor"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("index 7 is out of bounds for axis 1 with size 5"),
                  std::string::npos)
                << e.what();
    }
}

// In a graph the op copies its view into the output: a reversed slice at an offset.
TEST(SubtensorLayout, GraphLayoutIsTheContiguousView) {
    auto v = subtensor({slice(1, 3, 0, -2)}).infer_layouts(CompNode::load("cpu0"), {&k4x5, 1}, {});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].to_string(), "{4(2),2(1)} float32");
}
