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

// The plain-loop formulation for 3-D src: dst[i][0][k] = src[i][index[i][k]][k] along axis 1.
std::vector<double> one_hot_axis1_loops(const HostTensor& src, const HostTensor& index) {
    size_t a = src.shape()[0], c = src.shape()[2];
    std::vector<double> out;
    for (size_t i = 0; i < a; ++i)
        for (size_t k = 0; k < c; ++k)
            out.push_back(src.at({i, static_cast<size_t>(index.at({i, k})), k}));
    return out;
}

}  // namespace

TEST(IndexingOneHot, HandComputedAlongEachAxis) {
    auto src = iota({2, 3});  // [[0,1,2],[3,4,5]]
    auto d1 = run1<IndexingOneHot>(axis(1), {src, i32({2}, {2, 0})});
    EXPECT_TRUE(tensors_near(d1, HostTensor::from({2, 1}, {2, 3}), 0));
    auto d0 = run1<IndexingOneHot>(axis(0), {src, i32({3}, {1, 0, 1})});
    EXPECT_TRUE(tensors_near(d0, HostTensor::from({1, 3}, {3, 1, 5}), 0));
    auto dneg = run1<IndexingOneHot>(axis(-1), {src, i32({2}, {2, 0})});
    EXPECT_TRUE(tensors_near(dneg, d1, 0));
}

TEST(IndexingOneHot, MatchesPlainLoopsOnPrimeShapes) {
    std::mt19937 rng(3);
    HostTensor src({5, 7, 3}, dtype::Float32);
    fill_uniform(src, -1, 1, rng);
    HostTensor index({5, 3}, dtype::Int32);
    fill_uniform(index, 0, 7, rng);
    auto dst = run1<IndexingOneHot>(axis(1), {src, index});
    EXPECT_TRUE(dst.shape().eq_shape(TensorShape{5, 1, 3}));
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({5, 1, 3}, one_hot_axis1_loops(src, index)), 0));
}

TEST(IndexingSetOneHot, HandComputed) {
    auto data = iota({2, 3});
    auto dst = run1<IndexingSetOneHot>(
            axis(1), {data, i32({2}, {2, 0}), HostTensor::from({2, 1}, {10, 20})});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({2, 3}, {0, 1, 10, 20, 4, 5}), 0));
    // The op is pure: data is unchanged.
    EXPECT_TRUE(tensors_near(data, iota({2, 3}), 0));
}

TEST(IndexingSetOneHot, InPlaceWhenOutputIsData) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<IndexingSetOneHot>();
    op->param().axis = 0;
    auto data = iota({2, 2});
    auto index = i32({2}, {1, 0});
    auto sub = HostTensor::from({1, 2}, {-1, -2});
    TensorND in[] = {data.nd(), index.nd(), sub.nd()};
    TensorND out[] = {data.nd()};
    op->exec(in, out);
    EXPECT_TRUE(tensors_near(data, HostTensor::from({2, 2}, {0, -2, -1, 3}), 0));
}

TEST(IndexingOneHot, GradientIsSetOneHotIntoZeros) {
    std::mt19937 rng(5);
    HostTensor src({3, 4, 2}, dtype::Float32), dy({3, 1, 2}, dtype::Float32);
    fill_uniform(src, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    auto index = i32({3, 2}, {0, 3, 2, 2, 1, 0});
    auto fwd = [&](const std::vector<HostTensor>& in) { return run1<IndexingOneHot>(axis(1), in); };
    auto numeric = numeric_grad(fwd, {src, index}, 0, dy);
    HostTensor zeros({3, 4, 2}, dtype::Float32);
    auto analytic = run1<IndexingSetOneHot>(axis(1), {zeros, index, dy});
    EXPECT_TRUE(tensors_near(analytic, numeric, 1e-3));
}

TEST(IndexingSetOneHot, GradientsAreOneHotAndSetOneHotOfZeros) {
    std::mt19937 rng(7);
    HostTensor data({3, 4}, dtype::Float32), sub({3, 1}, dtype::Float32),
            dy({3, 4}, dtype::Float32);
    fill_uniform(data, -1, 1, rng);
    fill_uniform(sub, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    auto index = i32({3}, {3, 0, 3});
    auto fwd = [&](const std::vector<HostTensor>& in) {
        return run1<IndexingSetOneHot>(axis(1), in);
    };
    // d/dsub: the gradient at the written positions; d/ddata: dy with those positions zeroed.
    auto dsub = run1<IndexingOneHot>(axis(1), {dy, index});
    EXPECT_TRUE(tensors_near(dsub, numeric_grad(fwd, {data, index, sub}, 2, dy), 1e-3));
    auto ddata = run1<IndexingSetOneHot>(axis(1), {dy, index, HostTensor({3, 1}, dtype::Float32)});
    EXPECT_TRUE(tensors_near(ddata, numeric_grad(fwd, {data, index, sub}, 0, dy), 1e-3));
}

TEST(IndexingOneHot, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<IndexingOneHot> c(h.get());
        c.set_param(axis(1)).set_dtype(0, dt).set_dtype(1, dtype::Int32).set_range(1, 0, 5);
        c.execs({{3, 5, 4}, {3, 4}});
        c.set_noncontiguous(true).execs({{3, 5, 4}, {3, 4}});
        // Transposed src and a broadcast index.
        c.exec_layouts({TensorLayout({4, 5}, {1, 4}, dt), TensorLayout({4}, {0}, dtype::Int32)});
    }
    Checker<IndexingOneHot> big(h.get());
    big.set_param(axis(0)).set_dtype(1, dtype::Int32).set_range(1, 0, 61);
    big.execs({{61, 67, 13}, {67, 13}});
}

TEST(IndexingSetOneHot, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<IndexingSetOneHot> c(h.get());
        c.set_param(axis(-1)).set_dtype(0, dt).set_dtype(1, dtype::Int32).set_dtype(2, dt);
        c.set_range(1, 0, 7);
        c.execs({{3, 2, 7}, {3, 2}, {3, 2, 1}});
        c.set_noncontiguous(true).execs({{3, 2, 7}, {3, 2}, {3, 2, 1}});
        c.exec_layouts({TensorLayout({2, 7}, {1, 2}, dt), TensorLayout({2}, {-1}, dtype::Int32),
                        TensorLayout({2, 1}, {0, 0}, dt)});
    }
}

TEST(IndexingOneHot, StridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<IndexingOneHot>();
    op->param().axis = 1;
    auto src = iota({2, 3});
    auto index = i32({2}, {1, 2});
    HostTensor dst(padded_layout(TensorLayout({2, 1}, dtype::Float32)));
    TensorND in[] = {src.nd(), index.nd()};
    TensorND out[] = {dst.nd()};
    op->exec(in, out);
    EXPECT_EQ(dst.values(), (std::vector<double>{1, 5}));
}

TEST(IndexingOneHot, EmptyTensors) {
    auto d = run1<IndexingOneHot>(
            axis(1), {HostTensor({0, 3}, dtype::Float32), HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(d.shape().eq_shape(TensorShape{0, 1}));
    auto d0 = run1<IndexingOneHot>(
            axis(0), {HostTensor({4, 0}, dtype::Int8), HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(d0.shape().eq_shape(TensorShape{1, 0}));
    auto s = run1<IndexingSetOneHot>(
            axis(1), {HostTensor({0, 3}, dtype::Float32), HostTensor({0}, dtype::Int32),
                      HostTensor({0, 1}, dtype::Float32)});
    EXPECT_TRUE(s.shape().eq_shape(TensorShape{0, 3}));
    // An empty axis has no valid index.
    expect_error<IndexError>(
            [&] {
                run<IndexingOneHot>(axis(1), {HostTensor({2, 0}, dtype::Float32),
                                              HostTensor({2}, dtype::Int32)});
            },
            {"IndexingOneHot(axis=1)", "index 0", "axis 1", "size 0"});
}

TEST(IndexingOneHot, BadIndexValuesNameAxisIndexAndSize) {
    auto src = iota({2, 3});
    expect_error<IndexError>(
            [&] {
                run<IndexingOneHot>(axis(1), {src, i32({2}, {0, 3})});
            },
            {"IndexingOneHot(axis=1)", "index 3", "axis 1", "size 3"});
    expect_error<IndexError>(
            [&] {
                run<IndexingOneHot>(axis(0), {src, i32({3}, {0, -1, 0})});
            },
            {"IndexingOneHot(axis=0)", "index -1", "axis 0", "size 2"});
    expect_error<IndexError>(
            [&] {
                run<IndexingSetOneHot>(
                        axis(0), {src, i32({3}, {2, 0, 0}), HostTensor({1, 3}, dtype::Float32)});
            },
            {"IndexingSetOneHot(axis=0)", "index 2", "axis 0", "size 2"});
}

TEST(IndexingOneHot, ShapeDtypeAndParamErrors) {
    auto src = iota({2, 3});
    expect_error<ShapeError>(
            [&] {
                run<IndexingOneHot>(axis(1), {src, i32({3}, {0, 0, 0})});
            },
            {"IndexingOneHot(axis=1)", "index {3(1)} int32", "{2(3),3(1)} float32"});
    expect_error<ShapeError>(
            [&] {
                run<IndexingOneHot>(axis(0), {iota({}), HostTensor({}, dtype::Int32)});
            },
            {"IndexingOneHot(axis=0)", "at least one dim"});
    expect_error<DTypeError>(
            [&] {
                run<IndexingOneHot>(axis(1), {src, iota({2})});
            },
            {"IndexingOneHot(axis=1)", "int32", "{2(1)} float32"});
    expect_error<ParamError>(
            [&] {
                run<IndexingOneHot>(axis(2), {src, i32({2}, {0, 0})});
            },
            {"IndexingOneHot(axis=2)", "axis 2"});
    expect_error<ParamError>(
            [&] {
                run<IndexingOneHot>(axis(-3), {src, i32({2}, {0, 0})});
            },
            {"IndexingOneHot(axis=-3)", "axis -3"});
    expect_error<ShapeError>(
            [&] {
                run<IndexingSetOneHot>(axis(1), {src, i32({2}, {0, 0}), iota({2, 3})});
            },
            {"IndexingSetOneHot(axis=1)", "sub {2(3),3(1)}", "{2,1}"});
    expect_error<DTypeError>(
            [&] {
                run<IndexingSetOneHot>(axis(1),
                                       {src, i32({2}, {0, 0}), HostTensor({2, 1}, dtype::Int8)});
            },
            {"IndexingSetOneHot(axis=1)", "int8", "float32"});
}
