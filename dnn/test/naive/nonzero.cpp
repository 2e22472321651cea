#include <limits>

#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

// Columns [0, count) of a capacity-sized {ndim, N} coords tensor, row by row.
std::vector<double> first_columns(const HostTensor& coords, size_t count) {
    std::vector<double> out;
    for (size_t d = 0; d < coords.shape()[0]; ++d)
        for (size_t k = 0; k < count; ++k)
            out.push_back(coords.at({d, k}));
    return out;
}

}  // namespace

TEST(NonZero, HandComputed) {
    auto outs = run<NonZero>({}, {HostTensor::from({2, 3}, {0, 1, 0, 2, 0, 3})});
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_TRUE(outs[0].shape().eq_shape(TensorShape{2, 6}));  // capacity
    EXPECT_EQ(outs[0].dtype(), dtype::Int32);
    EXPECT_EQ(outs[1].values(), (std::vector<double>{3}));
    EXPECT_EQ(first_columns(outs[0], 3), (std::vector<double>{0, 1, 1, 1, 0, 2}));
}

TEST(NonZero, StaticShapeContractWithAColumnView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<NonZero>();
    auto src = HostTensor::from({4}, {0, 5, 0, 6}, dtype::Uint8);
    TensorLayout in_layouts[] = {src.layout()};
    std::vector<TensorLayout> out_layouts(op->num_outputs());
    op->deduce_layout(in_layouts, out_layouts);
    ASSERT_TRUE(out_layouts[0].eq_shape(TensorShape{1, 4}));
    std::vector<int32_t> coords(4, -1), count(1, -1);
    TensorND in[] = {src.nd()};
    TensorND out[] = {{coords.data(), out_layouts[0]}, {count.data(), out_layouts[1]}};
    op->exec(in, out);
    ASSERT_EQ(count[0], 2);
    EXPECT_EQ(coords, (std::vector<int32_t>{1, 3, -1, -1}));
    // The caller's view of the result: the first `count` columns, strides of the capacity.
    TensorLayout view({1, static_cast<size_t>(count[0])}, {4, 1}, dtype::Int32);
    EXPECT_EQ(TensorND(coords.data(), view).ptr<int32_t>()[1], 3);
}

TEST(NonZero, ZeroMeansZeroInTheDtype) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    auto outs = run<NonZero>({}, {HostTensor::from({4}, {-0.0, nan, 0, 0.5})});
    EXPECT_EQ(outs[1].values(), (std::vector<double>{2}));
    EXPECT_EQ(first_columns(outs[0], 2), (std::vector<double>{1, 3}));
    auto b = run<NonZero>({}, {HostTensor::from({3}, {1, 0, 1}, dtype::Bool)});
    EXPECT_EQ(first_columns(b[0], 2), (std::vector<double>{0, 2}));
}

TEST(NonZero, MatchesPlainLoopsForEveryDtype) {
    std::mt19937 rng(43);
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        HostTensor src({3, 5, 7}, dt);
        fill_uniform(src, -2, 2, rng);
        auto outs = run<NonZero>({}, {src});
        std::vector<std::vector<double>> want(3);
        for (size_t i = 0; i < 3; ++i)
            for (size_t j = 0; j < 5; ++j)
                for (size_t k = 0; k < 7; ++k)
                    if (src.at({i, j, k}) != 0) {
                        want[0].push_back(static_cast<double>(i));
                        want[1].push_back(static_cast<double>(j));
                        want[2].push_back(static_cast<double>(k));
                    }
        size_t n = want[0].size();
        ASSERT_EQ(outs[1].values()[0], static_cast<double>(n)) << dt.name();
        std::vector<double> flat;
        for (auto& row : want)
            flat.insert(flat.end(), row.begin(), row.end());
        EXPECT_EQ(first_columns(outs[0], n), flat) << dt.name();
        Checker<NonZero> c(h.get());
        c.set_dtype(0, dt).set_range(0, -2, 2);
        c.set_noncontiguous(true).execs({{3, 5, 7}});
        c.exec_layouts({TensorLayout({5, 7}, {1, 5}, dt)});
        c.exec_layouts({TensorLayout({4, 7}, {0, -1}, dt)});
    }
    Checker<NonZero>(h.get()).set_range(0, -1, 2).set_dtype(0, dtype::Int8).execs({{127, 131}});
}

TEST(NonZero, StridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<NonZero>();
    auto src = HostTensor::from({2, 2}, {0, 1, 1, 0});
    HostTensor coords(padded_layout(TensorLayout({2, 4}, dtype::Int32)));
    HostTensor count({1}, dtype::Int32);
    TensorND in[] = {src.nd()};
    TensorND out[] = {coords.nd(), count.nd()};
    op->exec(in, out);
    EXPECT_EQ(count.values(), (std::vector<double>{2}));
    EXPECT_EQ(first_columns(coords, 2), (std::vector<double>{0, 1, 1, 0}));
}

TEST(NonZero, EdgeShapesAndErrors) {
    auto empty = run<NonZero>({}, {HostTensor({3, 0}, dtype::Float32)});
    EXPECT_TRUE(empty[0].shape().eq_shape(TensorShape{2, 0}));
    EXPECT_EQ(empty[1].values(), (std::vector<double>{0}));
    auto one = run<NonZero>({}, {HostTensor::from({1}, {3}, dtype::Int32)});
    EXPECT_EQ(one[1].values(), (std::vector<double>{1}));
    EXPECT_EQ(one[0].values(), (std::vector<double>{0}));
    auto zeros = run<NonZero>({}, {HostTensor({2, 2}, dtype::Float16)});
    EXPECT_EQ(zeros[1].values(), (std::vector<double>{0}));
    expect_error<ShapeError>([&] { run<NonZero>({}, {HostTensor::from({}, {1})}); },
                             {"NonZero()", "at least one dim", "{} float32"});
}

TEST(NonZero, CapacityMustFitInt32) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<NonZero>();
    TensorLayout in[] = {TensorLayout({65536, 32768}, dtype::Float32)};
    std::vector<TensorLayout> out(2);
    expect_error<ShapeError>([&] { op->deduce_layout(in, out); },
                             {"NonZero()", "{65536(32768),32768(1)} float32", "int32"});
}
