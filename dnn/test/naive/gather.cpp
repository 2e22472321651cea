#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

param::IndexingAxis axis(int32_t a) {
    param::IndexingAxis p;
    p.axis = a;
    return p;
}

param::Scatter scatter_add(int32_t a) {
    param::Scatter p;
    p.axis = a;
    p.mode = param::Scatter::Mode::ADD;
    return p;
}

}  // namespace

TEST(Gather, HandComputedAlongEachAxis) {
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto d0 = run1<Gather>(axis(0), {src, i32({2, 3}, {1, 0, 1, 0, 1, 0})});
    EXPECT_TRUE(tensors_near(d0, HostTensor::from({2, 3}, {4, 2, 6, 1, 5, 3}), 0));
    auto d1 = run1<Gather>(axis(1), {src, i32({2, 2}, {2, 0, 1, 1})});
    EXPECT_TRUE(tensors_near(d1, HostTensor::from({2, 2}, {3, 1, 5, 5}), 0));
    // index may be smaller than src outside the axis (torch.gather).
    auto d2 = run1<Gather>(axis(-1), {src, i32({1, 4}, {2, 2, 0, 1})});
    EXPECT_TRUE(tensors_near(d2, HostTensor::from({1, 4}, {3, 3, 1, 2}), 0));
}

TEST(Gather, MatchesPlainLoopsIn3D) {
    std::mt19937 rng(23);
    HostTensor src({5, 7, 3}, dtype::Float32), index({4, 11, 2}, dtype::Int32);
    fill_uniform(src, -1, 1, rng);
    fill_uniform(index, 0, 7, rng);
    auto dst = run1<Gather>(axis(1), {src, index});
    ASSERT_TRUE(dst.shape().eq_shape(TensorShape{4, 11, 2}));
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 11; ++j)
            for (size_t k = 0; k < 2; ++k)
                EXPECT_EQ(dst.at({i, j, k}),
                          src.at({i, static_cast<size_t>(index.at({i, j, k})), k}));
}

TEST(Gather, GradientIsScatterAddIntoZeros) {
    std::mt19937 rng(29);
    HostTensor src({3, 4}, dtype::Float32), dy({3, 5}, dtype::Float32);
    fill_uniform(src, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    // Repeated indices within a row: their gradients add up.
    auto index = i32({3, 5}, {0, 0, 3, 1, 0, 2, 2, 2, 2, 2, 3, 1, 0, 1, 3});
    auto fwd = [&](const std::vector<HostTensor>& in) { return run1<Gather>(axis(1), in); };
    auto numeric = numeric_grad(fwd, {src, index}, 0, dy);
    auto analytic = run1<Scatter>(scatter_add(1), {HostTensor({3, 4}, dtype::Float32), index, dy});
    EXPECT_TRUE(tensors_near(analytic, numeric, 1e-3));
}

TEST(Gather, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<Gather> c(h.get());
        c.set_param(axis(0)).set_dtype(0, dt).set_dtype(1, dtype::Int32).set_range(1, 0, 5);
        c.execs({{5, 3, 2}, {7, 3, 1}});
        c.set_noncontiguous(true).execs({{5, 3, 2}, {7, 3, 1}});
        c.exec_layouts(
                {TensorLayout({5, 3}, {1, 5}, dt), TensorLayout({4, 3}, {0, -1}, dtype::Int32)});
    }
    Checker<Gather> big(h.get());
    big.set_param(axis(2)).set_dtype(1, dtype::Int32).set_range(1, 0, 127);
    big.execs({{13, 31, 127}, {13, 31, 101}});
}

TEST(Gather, StridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Gather>();
    op->param().axis = 1;
    auto src = iota({2, 3});
    auto index = i32({2, 2}, {2, 1, 0, 0});
    HostTensor dst(padded_layout(TensorLayout({2, 2}, dtype::Float32)));
    TensorND in[] = {src.nd(), index.nd()};
    TensorND out[] = {dst.nd()};
    op->exec(in, out);
    EXPECT_EQ(dst.values(), (std::vector<double>{2, 1, 3, 3}));
}

TEST(Gather, EmptyTensors) {
    auto e = run1<Gather>(axis(0), {iota({3, 2}), HostTensor({0, 2}, dtype::Int32)});
    EXPECT_TRUE(e.shape().eq_shape(TensorShape{0, 2}));
    auto e2 = run1<Gather>(axis(1),
                           {HostTensor({0, 4}, dtype::Int8), HostTensor({0, 6}, dtype::Int32)});
    EXPECT_TRUE(e2.shape().eq_shape(TensorShape{0, 6}));
    expect_error<IndexError>(
            [&] {
                run1<Gather>(axis(1), {HostTensor({2, 0}, dtype::Float32), i32({1, 1}, {0})});
            },
            {"Gather(axis=1)", "index 0", "axis 1", "size 0"});
}

TEST(Gather, BadIndexValuesNameAxisIndexAndSize) {
    auto src = iota({2, 3});
    expect_error<IndexError>(
            [&] {
                run1<Gather>(axis(1), {src, i32({1, 2}, {0, 3})});
            },
            {"Gather(axis=1)", "index 3", "axis 1", "size 3"});
    // Like torch.gather, negative indices are out of range.
    expect_error<IndexError>(
            [&] {
                run1<Gather>(axis(0), {src, i32({1, 1}, {-1})});
            },
            {"Gather(axis=0)", "index -1", "axis 0", "size 2"});
}

TEST(Gather, ShapeDtypeAndParamErrors) {
    auto src = iota({2, 3});
    expect_error<ShapeError>(
            [&] {
                run1<Gather>(axis(1), {src, i32({3, 1}, {0, 0, 0})});
            },
            {"Gather(axis=1)", "index {3(1),1(1)} int32", "src {2(3),3(1)} float32"});
    expect_error<ShapeError>(
            [&] {
                run1<Gather>(axis(0), {src, i32({2}, {0, 0})});
            },
            {"Gather(axis=0)", "index {2(1)} int32", "rank"});
    expect_error<ShapeError>(
            [&] {
                run1<Gather>(axis(0), {iota({}), HostTensor({}, dtype::Int32)});
            },
            {"Gather(axis=0)", "at least one dim"});
    expect_error<DTypeError>(
            [&] {
                run1<Gather>(axis(0), {src, HostTensor({1, 1}, dtype::Uint8)});
            },
            {"Gather(axis=0)", "int32", "{1(1),1(1)} uint8"});
    expect_error<ParamError>(
            [&] {
                run1<Gather>(axis(2), {src, i32({1, 1}, {0})});
            },
            {"Gather(axis=2)", "axis 2", "2 dims"});
}
