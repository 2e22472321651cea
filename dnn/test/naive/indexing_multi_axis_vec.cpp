#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

param::IndexingMultiAxis axes(std::vector<int32_t> a) {
    param::IndexingMultiAxis p;
    p.axes = std::move(a);
    return p;
}

size_t wrap(double v, size_t size) {
    return static_cast<size_t>(v < 0 ? v + static_cast<double>(size) : v);
}

HostTensor random(const TensorShape& s, double lo, double hi, std::mt19937& rng,
                  DType dt = dtype::Float32) {
    HostTensor t(s, dt);
    fill_uniform(t, lo, hi, rng);
    return t;
}

}  // namespace

TEST(IndexingMultiAxisVec, AdjacentAxesStayInPlace) {
    // src[i][j][l] = 12i + 4j + l
    auto dst = run1<IndexingMultiAxisVec>(axes({1, 2}),
                                          {iota({2, 3, 4}), i32({2}, {0, 2}), i32({2}, {1, 3})});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({2, 2}, {1, 11, 13, 23}), 0));
}

TEST(IndexingMultiAxisVec, NonAdjacentAxesGoInFront) {
    auto dst = run1<IndexingMultiAxisVec>(axes({0, 2}),
                                          {iota({2, 3, 4}), i32({2}, {1, 0}), i32({2}, {3, -1})});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({2, 3}, {15, 19, 23, 3, 7, 11}), 0));
}

TEST(IndexingMultiAxisVec, AxesInAnyOrder) {
    // axes[k] names the axis of index tensor k; adjacency is about the set of axes.
    auto front = run1<IndexingMultiAxisVec>(axes({2, 0}),
                                            {iota({2, 3, 4}), i32({2}, {3, 0}), i32({2}, {1, 1})});
    EXPECT_TRUE(tensors_near(front, HostTensor::from({2, 3}, {15, 19, 23, 12, 16, 20}), 0));
    auto in_place = run1<IndexingMultiAxisVec>(
            axes({2, 1}), {iota({2, 3, 4}), i32({2}, {0, 3}), i32({2}, {2, 1})});
    EXPECT_TRUE(tensors_near(in_place, HostTensor::from({2, 2}, {8, 7, 20, 19}), 0));
}

TEST(IndexingMultiAxisVec, IndexTensorsBroadcastTogether) {
    auto dst = run1<IndexingMultiAxisVec>(axes({0, 1}),
                                          {iota({3, 4}), i32({2, 1}, {0, 2}), i32({3}, {1, 2, 3})});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({2, 3}, {1, 2, 3, 9, 10, 11}), 0));
}

TEST(IndexingMultiAxisVec, EverySevenAxesOfOneShapeOrBroadcast) {
    // The plan's fixed arrays filled to MAX_NDIM, index tensors of one shape (taken as the block
    // shape as they are) and ones that broadcast. src's value is its flat offset.
    auto src = iota({2, 2, 2, 2, 2, 2, 2});
    std::vector<HostTensor> same{src}, mixed{src, i32({2, 1}, {1, 0})};
    for (int k = 0; k < 7; ++k)
        same.push_back(i32({2}, {1, 0}));
    for (int k = 1; k < 6; ++k)
        mixed.push_back(i32({1}, {1}));
    mixed.push_back(i32({2}, {0, 1}));
    auto all = axes({0, 1, 2, 3, 4, 5, 6});
    EXPECT_TRUE(tensors_near(run1<IndexingMultiAxisVec>(all, same), HostTensor::from({2}, {127, 0}),
                             0));
    EXPECT_TRUE(tensors_near(run1<IndexingMultiAxisVec>(all, mixed),
                             HostTensor::from({2, 2}, {126, 127, 62, 63}), 0));
}

TEST(IndexingMultiAxisVec, MultiDimIndexReplacesOneAxis) {
    auto src = iota({2, 3, 2});
    auto idx = i32({2, 2}, {2, 0, 1, 1});
    auto dst = run1<IndexingMultiAxisVec>(axes({1}), {src, idx});
    ASSERT_TRUE(dst.shape().eq_shape(TensorShape{2, 2, 2, 2}));
    for (size_t i = 0; i < 2; ++i)
        for (size_t p = 0; p < 2; ++p)
            for (size_t q = 0; q < 2; ++q)
                for (size_t k = 0; k < 2; ++k)
                    EXPECT_EQ(dst.at({i, p, q, k}),
                              src.at({i, static_cast<size_t>(idx.at({p, q})), k}));
}

TEST(IndexingMultiAxisVec, ScalarIndexDropsTheAxis) {
    auto row = run1<IndexingMultiAxisVec>(axes({0}), {iota({3, 4}), i32({}, {1})});
    EXPECT_TRUE(tensors_near(row, HostTensor::from({4}, {4, 5, 6, 7}), 0));
    auto col = run1<IndexingMultiAxisVec>(axes({-1}), {iota({3, 4}), i32({}, {-1})});
    EXPECT_TRUE(tensors_near(col, HostTensor::from({3}, {3, 7, 11}), 0));
}

TEST(IndexingMultiAxisVec, MatchesPlainLoopsWithNegativeIndices) {
    std::mt19937 rng(11);
    auto src = random({5, 7, 3, 4}, -1, 1, rng);
    auto a = random({6}, -7, 7, rng, dtype::Int32);
    auto b = random({6}, -4, 4, rng, dtype::Int32);
    auto dst = run1<IndexingMultiAxisVec>(axes({1, 3}), {src, a, b});
    ASSERT_TRUE(dst.shape().eq_shape(TensorShape{6, 5, 3}));
    for (size_t k = 0; k < 6; ++k)
        for (size_t i = 0; i < 5; ++i)
            for (size_t j = 0; j < 3; ++j)
                EXPECT_EQ(dst.at({k, i, j}),
                          src.at({i, wrap(a.at({k}), 7), j, wrap(b.at({k}), 4)}));
}

TEST(IndexingSetMultiAxisVec, HandComputed) {
    auto data = iota({3, 4});
    auto dst = run1<IndexingSetMultiAxisVec>(axes({0, 1}), {data, HostTensor::from({2}, {-1, -2}),
                                                            i32({2}, {0, 2}), i32({2}, {1, -1})});
    auto want = iota({3, 4}).values();
    want[1] = -1;
    want[11] = -2;
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({3, 4}, want), 0));
    EXPECT_TRUE(tensors_near(data, iota({3, 4}), 0));  // pure
}

TEST(IndexingSetMultiAxisVec, ValueBroadcastsAndLastDuplicateWins) {
    auto all = run1<IndexingSetMultiAxisVec>(
            axes({1}), {iota({2, 3}), HostTensor::from({}, {9}), i32({2}, {0, 2})});
    EXPECT_TRUE(tensors_near(all, HostTensor::from({2, 3}, {9, 1, 9, 9, 4, 9}), 0));
    auto rows = run1<IndexingSetMultiAxisVec>(
            axes({1}), {iota({2, 3}), HostTensor::from({2, 1}, {7, 8}), i32({2}, {0, 2})});
    EXPECT_TRUE(tensors_near(rows, HostTensor::from({2, 3}, {7, 1, 7, 8, 4, 8}), 0));
    auto dup = run1<IndexingSetMultiAxisVec>(
            axes({0}), {HostTensor({4}, dtype::Float32), HostTensor::from({3}, {5, 6, 7}),
                        i32({3}, {1, 1, 2})});
    EXPECT_TRUE(tensors_near(dup, HostTensor::from({4}, {0, 6, 7, 0}), 0));
}

TEST(IndexingSetMultiAxisVec, NonAdjacentValueFollowsFrontPlacement) {
    // data[[1,0], :, [0,3]] has shape {2,3}: value row k goes to data[idx0[k], :, idx1[k]].
    auto dst = run1<IndexingSetMultiAxisVec>(
            axes({0, 2}), {HostTensor({2, 3, 4}, dtype::Int16),
                           HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, dtype::Int16),
                           i32({2}, {1, 0}), i32({2}, {0, 3})});
    for (size_t j = 0; j < 3; ++j) {
        EXPECT_EQ(dst.at({1, j, 0}), static_cast<double>(1 + j));
        EXPECT_EQ(dst.at({0, j, 3}), static_cast<double>(4 + j));
    }
    auto v = dst.values();
    EXPECT_EQ(std::count(v.begin(), v.end(), 0.0), 24 - 6);
}

TEST(IndexingIncrMultiAxisVec, RepeatedIndicesAccumulateLikeAddAt) {
    auto dst = run1<IndexingIncrMultiAxisVec>(
            axes({0}), {HostTensor::from({5}, {1, 1, 1, 1, 1}), HostTensor::from({4}, {1, 2, 3, 4}),
                        i32({4}, {1, -4, 3, 1})});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({5}, {1, 8, 1, 4, 1}), 0));
    auto scalar = run1<IndexingIncrMultiAxisVec>(
            axes({0}), {HostTensor::from({2}, {10, 20}, dtype::Int32),
                        HostTensor::from({}, {2}, dtype::Int32), i32({3}, {0, 0, 0})});
    EXPECT_TRUE(tensors_near(scalar, HostTensor::from({2}, {16, 20}, dtype::Int32), 0));
}

TEST(IndexingIncrMultiAxisVec, MatchesAddAtLoops) {
    std::mt19937 rng(13);
    auto data = random({4, 3, 5}, -1, 1, rng);
    auto value = random({7, 3}, -1, 1, rng);
    auto a = random({7}, -4, 4, rng, dtype::Int32);
    auto b = random({7}, 0, 5, rng, dtype::Int32);
    auto dst = run1<IndexingIncrMultiAxisVec>(axes({0, 2}), {data, value, a, b});
    auto want = data.contiguous();
    std::vector<double> w = want.values();
    for (size_t k = 0; k < 7; ++k)
        for (size_t j = 0; j < 3; ++j)
            w[(wrap(a.at({k}), 4) * 3 + j) * 5 + wrap(b.at({k}), 5)] += value.at({k, j});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({4, 3, 5}, w), 1e-5));
}

TEST(IndexingMultiAxisVec, GradientIsIncrIntoZeros) {
    std::mt19937 rng(17);
    auto src = random({3, 4, 5}, -1, 1, rng);
    auto a = i32({6}, {0, 2, 2, -1, 0, 2});  // repeated positions get summed gradients
    auto b = i32({6}, {4, 1, 1, 0, 4, -4});
    auto dy = random({6, 4}, -1, 1, rng);
    auto fwd = [&](const std::vector<HostTensor>& in) {
        return run1<IndexingMultiAxisVec>(axes({0, 2}), in);
    };
    auto numeric = numeric_grad(fwd, {src, a, b}, 0, dy);
    auto analytic = run1<IndexingIncrMultiAxisVec>(
            axes({0, 2}), {HostTensor({3, 4, 5}, dtype::Float32), dy, a, b});
    EXPECT_TRUE(tensors_near(analytic, numeric, 1e-3));
}

TEST(IndexingIncrMultiAxisVec, GradientOfValueIsIndexing) {
    std::mt19937 rng(19);
    auto data = random({4, 3}, -1, 1, rng);
    auto value = random({5, 3}, -1, 1, rng);
    auto idx = i32({5}, {3, 0, 3, -1, 1});
    auto dy = random({4, 3}, -1, 1, rng);
    auto fwd = [&](const std::vector<HostTensor>& in) {
        return run1<IndexingIncrMultiAxisVec>(axes({0}), in);
    };
    auto numeric_value = numeric_grad(fwd, {data, value, idx}, 1, dy);
    auto analytic_value = run1<IndexingMultiAxisVec>(axes({0}), {dy, idx});
    EXPECT_TRUE(tensors_near(analytic_value, numeric_value, 1e-3));
    auto numeric_data = numeric_grad(fwd, {data, value, idx}, 0, dy);
    EXPECT_TRUE(tensors_near(dy, numeric_data, 1e-3));
}

TEST(IndexingSetMultiAxisVec, GradientsAreIndexingAndSetOfZeros) {
    std::mt19937 rng(21);
    auto data = random({4, 3, 2}, -1, 1, rng);
    auto value = random({3, 3}, -1, 1, rng);
    auto a = i32({3}, {2, -1, 0});  // distinct positions: with repeats only the last write counts
    auto b = i32({3}, {1, 0, 1});
    auto dy = random({4, 3, 2}, -1, 1, rng);
    auto fwd = [&](const std::vector<HostTensor>& in) {
        return run1<IndexingSetMultiAxisVec>(axes({0, 2}), in);
    };
    auto dvalue = run1<IndexingMultiAxisVec>(axes({0, 2}), {dy, a, b});
    EXPECT_TRUE(tensors_near(dvalue, numeric_grad(fwd, {data, value, a, b}, 1, dy), 1e-3));
    auto ddata = run1<IndexingSetMultiAxisVec>(axes({0, 2}), {dy, HostTensor::from({}, {0}), a, b});
    EXPECT_TRUE(tensors_near(ddata, numeric_grad(fwd, {data, value, a, b}, 0, dy), 1e-3));
}

TEST(IndexingMultiAxisVec, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<IndexingMultiAxisVec> c(h.get());
        c.set_param(axes({0, 2})).set_dtype(0, dt);
        c.set_dtype(1, dtype::Int32).set_range(1, -3, 3);
        c.set_dtype(2, dtype::Int32).set_range(2, -5, 5);
        c.execs({{3, 4, 5}, {2, 1}, {6}});
        c.set_noncontiguous(true).execs({{3, 4, 5}, {2, 1}, {6}});
        // Transposed src, a broadcast index and a reversed one.
        c.exec_layouts({TensorLayout({3, 4, 5}, {1, 15, 3}, dt),
                        TensorLayout({2, 6}, {1, 0}, dtype::Int32),
                        TensorLayout({6}, {-1}, dtype::Int32)});
    }
    Checker<IndexingMultiAxisVec> big(h.get());
    big.set_param(axes({1})).set_dtype(1, dtype::Int32).set_range(1, -97, 97);
    big.execs({{31, 97, 17}, {53}});
}

TEST(IndexingSetMultiAxisVec, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<IndexingSetMultiAxisVec> c(h.get());
        c.set_param(axes({1, 2})).set_dtype(0, dt).set_dtype(1, dt);
        c.set_dtype(2, dtype::Int32).set_range(2, -4, 4);
        c.set_dtype(3, dtype::Int32).set_range(3, -5, 5);
        c.execs({{3, 4, 5}, {3, 7}, {7}, {1}});
        c.set_noncontiguous(true).execs({{3, 4, 5}, {3, 7}, {7}, {1}});
        c.exec_layouts({TensorLayout({3, 4, 5}, {1, 15, 3}, dt), TensorLayout({3, 7}, {0, 1}, dt),
                        TensorLayout({7}, {1}, dtype::Int32),
                        TensorLayout({7}, {0}, dtype::Int32)});
    }
}

TEST(IndexingIncrMultiAxisVec, NumericDtypesAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        if (dt.is_bool())
            continue;
        Checker<IndexingIncrMultiAxisVec> c(h.get());
        c.set_param(axes({0})).set_dtype(0, dt).set_dtype(1, dt);
        c.set_dtype(2, dtype::Int32).set_range(2, -3, 3).set_range(1, -4, 4);
        c.execs({{3, 5}, {11, 5}, {11}});
        c.set_noncontiguous(true).execs({{3, 5}, {11, 5}, {11}});
        c.exec_layouts({TensorLayout({3, 5}, {1, 3}, dt), TensorLayout({11, 5}, {0, 1}, dt),
                        TensorLayout({11}, {-1}, dtype::Int32)});
    }
    expect_error<DTypeError>(
            [&] {
                run1<IndexingIncrMultiAxisVec>(
                        axes({0}), {HostTensor({2}, dtype::Bool), HostTensor({1}, dtype::Bool),
                                    i32({1}, {0})});
            },
            {"IndexingIncrMultiAxisVec(axes=[0])", "bool", "{2(1)} bool"});
}

TEST(IndexingMultiAxisVec, StridedOutputViews) {
    auto h = Handle::make_naive();
    auto get = h->create_operator<IndexingMultiAxisVec>();
    get->param().axes = {1};
    auto src = iota({2, 3});
    auto idx = i32({2}, {2, 0});
    HostTensor dst(padded_layout(TensorLayout({2, 2}, dtype::Float32)));
    TensorND gin[] = {src.nd(), idx.nd()};
    TensorND gout[] = {dst.nd()};
    get->exec(gin, gout);
    EXPECT_EQ(dst.values(), (std::vector<double>{2, 0, 5, 3}));

    auto set = h->create_operator<IndexingSetMultiAxisVec>();
    set->param().axes = {1};
    auto value = HostTensor::from({2, 2}, {-1, -2, -3, -4});
    HostTensor out(padded_layout(TensorLayout({2, 3}, dtype::Float32)));
    TensorND sin[] = {src.nd(), value.nd(), idx.nd()};
    TensorND sout[] = {out.nd()};
    set->exec(sin, sout);
    EXPECT_EQ(out.values(), (std::vector<double>{-2, 1, -1, -4, 4, -3}));
}

TEST(IndexingMultiAxisVec, EmptyTensorsAndEmptyIndexArrays) {
    auto e = run1<IndexingMultiAxisVec>(axes({1}), {iota({2, 3}), HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(e.shape().eq_shape(TensorShape{2, 0}));
    auto e2 = run1<IndexingMultiAxisVec>(
            axes({0}), {HostTensor({0, 3}, dtype::Float32), HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(e2.shape().eq_shape(TensorShape{0, 3}));
    auto e3 = run1<IndexingMultiAxisVec>(axes({0}),
                                         {HostTensor({3, 0}, dtype::Float32), i32({2}, {2, -3})});
    EXPECT_TRUE(e3.shape().eq_shape(TensorShape{2, 0}));
    auto s = run1<IndexingSetMultiAxisVec>(
            axes({1}),
            {iota({2, 3}), HostTensor({2, 0}, dtype::Float32), HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(tensors_near(s, iota({2, 3}), 0));
    auto inc = run1<IndexingIncrMultiAxisVec>(
            axes({0}), {HostTensor({0, 2}, dtype::Float32), HostTensor({0, 2}, dtype::Float32),
                        HostTensor({0}, dtype::Int32)});
    EXPECT_TRUE(inc.shape().eq_shape(TensorShape{0, 2}));
    // NumPy checks the indices even when the result is empty.
    expect_error<IndexError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({1}),
                                           {HostTensor({0, 3}, dtype::Float32), i32({1}, {3})});
            },
            {"IndexingMultiAxisVec(axes=[1])", "index 3", "axis 1", "size 3"});
}

TEST(IndexingMultiAxisVec, BadIndexValuesNameAxisIndexAndSize) {
    auto src = iota({2, 3, 4});
    expect_error<IndexError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, 2}), {src, i32({2}, {0, 1}), i32({2}, {0, 4})});
            },
            {"IndexingMultiAxisVec(axes=[0,2])", "index 4", "axis 2", "size 4"});
    // Negative indices wrap once: -4 is the first element, -5 is out of range.
    EXPECT_NO_THROW(run1<IndexingMultiAxisVec>(axes({2}), {src, i32({1}, {-4})}));
    expect_error<IndexError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({-1}), {src, i32({1}, {-5})});
            },
            {"IndexingMultiAxisVec(axes=[-1])", "index -5", "axis 2", "size 4"});
    auto data = iota({2, 3});
    expect_error<IndexError>(
            [&] {
                run1<IndexingSetMultiAxisVec>(axes({0}),
                                              {data, HostTensor::from({}, {1}), i32({2}, {1, 2})});
            },
            {"IndexingSetMultiAxisVec(axes=[0])", "index 2", "axis 0", "size 2"});
    expect_error<IndexError>(
            [&] {
                run1<IndexingIncrMultiAxisVec>(axes({1}),
                                               {data, HostTensor::from({}, {1}), i32({1}, {-4})});
            },
            {"IndexingIncrMultiAxisVec(axes=[1])", "index -4", "axis 1", "size 3"});
}

TEST(IndexingMultiAxisVec, ShapeErrorsNameOpAndShapes) {
    auto src = iota({2, 3, 4});
    expect_error<ShapeError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, 1}),
                                           {src, i32({2}, {0, 0}), i32({3}, {0, 0, 0})});
            },
            {"IndexingMultiAxisVec(axes=[0,1])", "{2}", "{3}", "broadcast"});
    expect_error<ShapeError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, 1}), {src, i32({1}, {0})});
            },
            {"IndexingMultiAxisVec(axes=[0,1])", "2 axes", "got 1"});
    expect_error<ShapeError>(
            [&] {
                run1<IndexingSetMultiAxisVec>(axes({1}), {src, iota({2, 3, 4}), i32({2}, {0, 1})});
            },
            {"IndexingSetMultiAxisVec(axes=[1])", "value {2(12),3(4),4(1)} float32", "{2,2,4}"});
    expect_error<ShapeError>(
            [&] {
                run1<IndexingIncrMultiAxisVec>(axes({1}), {src, iota({1})});
            },
            {"IndexingIncrMultiAxisVec(axes=[1])", "1 axes need as many index tensors, got 0"});
    // Seven dims is the limit: 5 kept axes plus a 3-D index block would be 8.
    TensorShape seven{1, 1, 1, 1, 1, 1, 1};
    expect_error<ShapeError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, 2}), {HostTensor(seven, dtype::Float32),
                                                          HostTensor({1, 1, 1}, dtype::Int32),
                                                          HostTensor({1}, dtype::Int32)});
            },
            {"IndexingMultiAxisVec(axes=[0,2])", "8 dims"});
}

TEST(IndexingMultiAxisVec, DtypeAndParamErrors) {
    auto src = iota({2, 3});
    expect_error<DTypeError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0}), {src, iota({2})});
            },
            {"IndexingMultiAxisVec(axes=[0])", "indices[0]", "{2(1)} float32"});
    expect_error<DTypeError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, 1}),
                                           {src, i32({1}, {0}), HostTensor({1}, dtype::Int16)});
            },
            {"IndexingMultiAxisVec(axes=[0,1])", "indices[1]", "int16"});
    expect_error<DTypeError>(
            [&] {
                run1<IndexingSetMultiAxisVec>(axes({0}),
                                              {src, HostTensor({3}, dtype::Int32), i32({1}, {0})});
            },
            {"IndexingSetMultiAxisVec(axes=[0])", "value {3(1)} int32", "float32"});
    expect_error<ParamError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({0, -2}), {src, i32({1}, {0}), i32({1}, {0})});
            },
            {"IndexingMultiAxisVec(axes=[0,-2])", "indexed twice"});
    expect_error<ParamError>(
            [&] {
                run1<IndexingMultiAxisVec>(axes({2}), {src, i32({1}, {0})});
            },
            {"IndexingMultiAxisVec(axes=[2])", "axis 2", "2 dims"});
    expect_error<ParamError>([&] { run1<IndexingMultiAxisVec>(axes({}), {src}); },
                             {"IndexingMultiAxisVec(axes=[])", "at least one"});
}

TEST(IndexingSetMultiAxisVec, BadIndexWritesNothing) {
    // Every index is checked before the first write, so an in-place update fails cleanly.
    auto h = Handle::make_naive();
    auto op = h->create_operator<IndexingSetMultiAxisVec>();
    op->param().axes = {0};
    auto data = iota({4});
    auto value = HostTensor::from({3}, {-1, -2, -3});
    auto idx = i32({3}, {0, 1, 4});
    TensorND in[] = {data.nd(), value.nd(), idx.nd()};
    TensorND out[] = {data.nd()};
    EXPECT_THROW(op->exec(in, out), IndexError);
    EXPECT_EQ(data.values(), (std::vector<double>{0, 1, 2, 3}));
}
