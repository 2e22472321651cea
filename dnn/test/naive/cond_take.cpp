#include <limits>

#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

HostTensor mask(const TensorShape& s, const std::vector<double>& v) {
    return HostTensor::from(s, v, dtype::Bool);
}

// The first `count` elements of a capacity-sized 1-D output.
std::vector<double> first(const HostTensor& t, size_t count) {
    auto v = t.values();
    return {v.begin(), v.begin() + static_cast<ptrdiff_t>(count)};
}

}  // namespace

TEST(CondTake, HandComputed) {
    auto outs = run<CondTake>({}, {iota({2, 3}), mask({2, 3}, {1, 0, 1, 0, 0, 1})});
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_TRUE(outs[0].shape().eq_shape(TensorShape{6}));  // capacity
    EXPECT_TRUE(outs[1].shape().eq_shape(TensorShape{6}));
    EXPECT_EQ(outs[2].values(), (std::vector<double>{3}));
    EXPECT_EQ(first(outs[0], 3), (std::vector<double>{0, 2, 5}));
    EXPECT_EQ(first(outs[1], 3), (std::vector<double>{0, 2, 5}));
    EXPECT_EQ(outs[1].dtype(), dtype::Int32);
    EXPECT_EQ(outs[2].dtype(), dtype::Int32);
}

TEST(CondTake, StaticShapeContract) {
    // The caller allocates the capacity deduce_layout gives, runs, then views the first `count`
    // elements; nothing past count is written.
    auto h = Handle::make_naive();
    auto op = h->create_operator<CondTake>();
    auto data = HostTensor::from({5}, {10, 11, 12, 13, 14}, dtype::Int16);
    auto m = mask({5}, {0, 1, 0, 1, 1});
    TensorLayout in_layouts[] = {data.layout(), m.layout()};
    std::vector<TensorLayout> out_layouts(op->num_outputs());
    op->deduce_layout(in_layouts, out_layouts);
    ASSERT_EQ(out_layouts[0].total_nr_elems(), 5u);
    std::vector<int16_t> values(5, -1);
    std::vector<int32_t> indices(5, -1), count(1, -1);
    TensorND in[] = {data.nd(), m.nd()};
    TensorND out[] = {{values.data(), out_layouts[0]},
                      {indices.data(), out_layouts[1]},
                      {count.data(), out_layouts[2]}};
    op->exec(in, out);
    ASSERT_EQ(count[0], 3);
    EXPECT_EQ(values, (std::vector<int16_t>{11, 13, 14, -1, -1}));
    EXPECT_EQ(indices, (std::vector<int32_t>{1, 3, 4, -1, -1}));
}

TEST(CondTake, StridedInputsUseLogicalRowMajorIndices) {
    // A transposed view: logical element (i, j) lives at offset j * 2 + i.
    HostTensor data(TensorLayout({3, 2}, {1, 3}, dtype::Float32));
    data.set_values({0, 1, 2, 3, 4, 5});
    HostTensor m(TensorLayout({3, 2}, {1, 3}, dtype::Bool));
    m.set_values({0, 1, 1, 0, 0, 1});
    auto outs = run<CondTake>({}, {data, m});
    EXPECT_EQ(outs[2].values(), (std::vector<double>{3}));
    EXPECT_EQ(first(outs[0], 3), (std::vector<double>{1, 2, 5}));
    EXPECT_EQ(first(outs[1], 3), (std::vector<double>{1, 2, 5}));
    // Broadcast mask and data (stride 0).
    HostTensor bdata(TensorLayout({2, 3}, {0, 1}, dtype::Float32));
    bdata.set_values({7, 8, 9, 7, 8, 9});
    HostTensor bmask(TensorLayout({2, 3}, {1, 0}, dtype::Bool));
    bmask.set_values({0, 0, 0, 1, 1, 1});
    auto bouts = run<CondTake>({}, {bdata, bmask});
    EXPECT_EQ(bouts[2].values(), (std::vector<double>{3}));
    EXPECT_EQ(first(bouts[0], 3), (std::vector<double>{7, 8, 9}));
    EXPECT_EQ(first(bouts[1], 3), (std::vector<double>{3, 4, 5}));
}

TEST(CondTake, MatchesPlainLoopForEveryDtype) {
    std::mt19937 rng(41);
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        HostTensor data({7, 11}, dt), m({7, 11}, dtype::Bool);
        fill_uniform(data, -5, 5, rng);
        fill_uniform(m, 0, 1, rng);
        auto outs = run<CondTake>({}, {data, m});
        std::vector<double> want_v, want_i;
        auto dv = data.values(), mv = m.values();
        for (size_t i = 0; i < dv.size(); ++i) {
            if (mv[i] != 0) {
                want_v.push_back(dv[i]);
                want_i.push_back(static_cast<double>(i));
            }
        }
        ASSERT_EQ(outs[2].values()[0], static_cast<double>(want_v.size())) << dt.name();
        EXPECT_EQ(first(outs[0], want_v.size()), want_v) << dt.name();
        EXPECT_EQ(first(outs[1], want_i.size()), want_i) << dt.name();
        EXPECT_EQ(outs[0].dtype(), dt);
        Checker<CondTake> c(h.get());
        c.set_dtype(0, dt).set_dtype(1, dtype::Bool);
        c.set_noncontiguous(true).execs({{7, 11}, {7, 11}});
        c.exec_layouts(
                {TensorLayout({7, 11}, {1, 7}, dt), TensorLayout({7, 11}, {0, 1}, dtype::Bool)});
    }
    Checker<CondTake>(h.get()).set_dtype(1, dtype::Bool).execs({{101, 103}, {101, 103}});
}

TEST(CondTake, EdgeShapes) {
    auto empty = run<CondTake>(
            {}, {HostTensor({0, 4}, dtype::Float32), HostTensor({0, 4}, dtype::Bool)});
    EXPECT_TRUE(empty[0].shape().eq_shape(TensorShape{0}));
    EXPECT_TRUE(empty[1].shape().eq_shape(TensorShape{0}));
    EXPECT_EQ(empty[2].values(), (std::vector<double>{0}));
    auto none = run<CondTake>({}, {iota({3}), mask({3}, {0, 0, 0})});
    EXPECT_EQ(none[2].values(), (std::vector<double>{0}));
    auto all = run<CondTake>({}, {iota({3}), mask({3}, {1, 1, 1})});
    EXPECT_EQ(all[2].values(), (std::vector<double>{3}));
    EXPECT_EQ(all[0].values(), (std::vector<double>{0, 1, 2}));
    auto scalar = run<CondTake>({}, {HostTensor::from({}, {4}), mask({}, {1})});
    EXPECT_TRUE(scalar[0].shape().eq_shape(TensorShape{1}));
    EXPECT_EQ(scalar[0].values(), (std::vector<double>{4}));
    EXPECT_EQ(scalar[1].values(), (std::vector<double>{0}));
}

TEST(CondTake, ShapeAndDtypeErrors) {
    expect_error<ShapeError>(
            [&] {
                run<CondTake>({}, {iota({2, 3}), mask({3, 2}, {1, 1, 1, 1, 1, 1})});
            },
            {"CondTake()", "mask {3(2),2(1)} bool", "data {2(3),3(1)} float32"});
    expect_error<DTypeError>(
            [&] {
                run<CondTake>({}, {iota({2}), HostTensor({2}, dtype::Int32)});
            },
            {"CondTake()", "mask must be bool", "{2(1)} int32"});
}

TEST(CondTake, CapacityMustFitInt32) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<CondTake>();
    TensorLayout in[] = {TensorLayout({65536, 32768}, dtype::Int8),
                         TensorLayout({65536, 32768}, dtype::Bool)};
    std::vector<TensorLayout> out(3);
    expect_error<ShapeError>([&] { op->deduce_layout(in, out); },
                             {"CondTake()", "{65536(32768),32768(1)} int8", "int32"});
}
