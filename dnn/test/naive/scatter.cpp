#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

param::Scatter scatter(int32_t a, param::Scatter::Mode mode = param::Scatter::Mode::SET) {
    param::Scatter p;
    p.axis = a;
    p.mode = mode;
    return p;
}
constexpr auto ADD = param::Scatter::Mode::ADD;

}  // namespace

TEST(Scatter, HandComputedSet) {
    auto data = HostTensor({3, 5}, dtype::Float32);
    auto index = i32({2, 5}, {0, 1, 2, 0, 0, 2, 0, 0, 1, 2});
    auto src = iota({2, 5});  // 0..9
    auto dst = run1<Scatter>(scatter(0), {data, index, src});
    EXPECT_TRUE(tensors_near(
            dst, HostTensor::from({3, 5}, {0, 6, 7, 3, 4, 0, 1, 0, 8, 0, 5, 0, 2, 0, 9}), 0));
    auto col = run1<Scatter>(
            scatter(-1), {iota({2, 3}), i32({2, 1}, {2, 0}), HostTensor::from({2, 1}, {-1, -2})});
    EXPECT_TRUE(tensors_near(col, HostTensor::from({2, 3}, {0, 1, -1, -2, 4, 5}), 0));
}

TEST(Scatter, DuplicatesLastWinsForSetAndAccumulateForAdd) {
    auto data = HostTensor::from({3}, {1, 1, 1});
    auto index = i32({3}, {1, 1, 1});
    auto src = HostTensor::from({3}, {5, 6, 7});
    EXPECT_TRUE(tensors_near(run1<Scatter>(scatter(0), {data, index, src}),
                             HostTensor::from({3}, {1, 7, 1}), 0));
    EXPECT_TRUE(tensors_near(run1<Scatter>(scatter(0, ADD), {data, index, src}),
                             HostTensor::from({3}, {1, 19, 1}), 0));
    EXPECT_TRUE(tensors_near(data, HostTensor::from({3}, {1, 1, 1}), 0));  // pure
}

TEST(Scatter, AddMatchesPlainLoopsIn3D) {
    std::mt19937 rng(31);
    HostTensor data({4, 6, 3}, dtype::Float32), index({3, 9, 2}, dtype::Int32),
            src({3, 9, 2}, dtype::Float32);
    fill_uniform(data, -1, 1, rng);
    fill_uniform(index, 0, 6, rng);
    fill_uniform(src, -1, 1, rng);
    auto dst = run1<Scatter>(scatter(1, ADD), {data, index, src});
    auto w = data.values();
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 9; ++j)
            for (size_t k = 0; k < 2; ++k)
                w[(i * 6 + static_cast<size_t>(index.at({i, j, k}))) * 3 + k] += src.at({i, j, k});
    EXPECT_TRUE(tensors_near(dst, HostTensor::from({4, 6, 3}, w), 1e-5));
}

TEST(Scatter, AddGradientsAreGatherAndIdentity) {
    std::mt19937 rng(37);
    HostTensor data({3, 4}, dtype::Float32), src({2, 4}, dtype::Float32),
            dy({3, 4}, dtype::Float32);
    fill_uniform(data, -1, 1, rng);
    fill_uniform(src, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    auto index = i32({2, 4}, {0, 2, 2, 1, 0, 2, 1, 1});
    auto fwd = [&](const std::vector<HostTensor>& in) {
        return run1<Scatter>(scatter(0, ADD), in);
    };
    param::IndexingAxis gather_axis;
    auto dsrc = run1<Gather>(gather_axis, {dy, index});
    EXPECT_TRUE(tensors_near(dsrc, numeric_grad(fwd, {data, index, src}, 2, dy), 1e-3));
    EXPECT_TRUE(tensors_near(dy, numeric_grad(fwd, {data, index, src}, 0, dy), 1e-3));
}

TEST(Scatter, SetGradientsAreGatherAndSetOfZeros) {
    std::mt19937 rng(39);
    HostTensor data({3, 4}, dtype::Float32), src({2, 3}, dtype::Float32),
            dy({3, 4}, dtype::Float32);
    fill_uniform(data, -1, 1, rng);
    fill_uniform(src, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    auto index = i32({2, 3}, {0, 2, 1, 2, 0, 0});  // no position written twice
    auto fwd = [&](const std::vector<HostTensor>& in) { return run1<Scatter>(scatter(0), in); };
    param::IndexingAxis gather_axis;
    auto dsrc = run1<Gather>(gather_axis, {dy, index});
    EXPECT_TRUE(tensors_near(dsrc, numeric_grad(fwd, {data, index, src}, 2, dy), 1e-3));
    auto ddata = run1<Scatter>(scatter(0), {dy, index, HostTensor({2, 3}, dtype::Float32)});
    EXPECT_TRUE(tensors_near(ddata, numeric_grad(fwd, {data, index, src}, 0, dy), 1e-3));
}

TEST(Scatter, EveryDtypeAndStridedInputs) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        for (auto mode : {param::Scatter::Mode::SET, ADD}) {
            if (mode == ADD && dt.is_bool())
                continue;
            Checker<Scatter> c(h.get());
            c.set_param(scatter(1, mode)).set_dtype(0, dt).set_dtype(2, dt);
            c.set_dtype(1, dtype::Int32).set_range(1, 0, 5).set_range(2, -3, 3);
            c.execs({{3, 5, 2}, {2, 7, 2}, {2, 7, 2}});
            c.set_noncontiguous(true).execs({{3, 5, 2}, {2, 7, 2}, {2, 7, 2}});
            c.exec_layouts({TensorLayout({3, 5}, {1, 3}, dt),
                            TensorLayout({3, 4}, {-1, 0}, dtype::Int32),
                            TensorLayout({3, 4}, {0, 1}, dt)});
        }
    }
    Checker<Scatter> big(h.get());
    big.set_param(scatter(0, ADD)).set_dtype(1, dtype::Int32).set_range(1, 0, 97);
    big.execs({{97, 61}, {131, 61}, {131, 61}});
    expect_error<DTypeError>(
            [&] {
                run1<Scatter>(scatter(0, ADD), {HostTensor({2}, dtype::Bool), i32({1}, {0}),
                                                HostTensor({1}, dtype::Bool)});
            },
            {"Scatter(axis=0, mode=ADD)", "bool", "{2(1)} bool"});
}

TEST(Scatter, StridedOutputViewAndInPlace) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Scatter>();
    op->param().axis = 0;
    auto data = iota({3});
    auto index = i32({2}, {2, 0});
    auto src = HostTensor::from({2}, {-1, -2});
    HostTensor dst(padded_layout(TensorLayout({3}, dtype::Float32)));
    TensorND in[] = {data.nd(), index.nd(), src.nd()};
    TensorND out[] = {dst.nd()};
    op->exec(in, out);
    EXPECT_EQ(dst.values(), (std::vector<double>{-2, 1, -1}));
    TensorND same[] = {data.nd()};
    op->exec(in, same);
    EXPECT_EQ(data.values(), (std::vector<double>{-2, 1, -1}));
}

TEST(Scatter, EmptyTensors) {
    auto e = run1<Scatter>(scatter(0), {iota({3, 2}), HostTensor({0, 2}, dtype::Int32),
                                        HostTensor({0, 2}, dtype::Float32)});
    EXPECT_TRUE(tensors_near(e, iota({3, 2}), 0));
    auto e2 = run1<Scatter>(scatter(1, ADD),
                            {HostTensor({0, 4}, dtype::Float32), HostTensor({0, 2}, dtype::Int32),
                             HostTensor({0, 2}, dtype::Float32)});
    EXPECT_TRUE(e2.shape().eq_shape(TensorShape{0, 4}));
}

TEST(Scatter, BadIndexValuesNameAxisIndexAndSize) {
    auto data = iota({2, 3});
    expect_error<IndexError>(
            [&] {
                run1<Scatter>(scatter(1), {data, i32({1, 1}, {3}), iota({1, 1})});
            },
            {"Scatter(axis=1, mode=SET)", "index 3", "axis 1", "size 3"});
    expect_error<IndexError>(
            [&] {
                run1<Scatter>(scatter(0, ADD), {data, i32({1, 1}, {-1}), iota({1, 1})});
            },
            {"Scatter(axis=0, mode=ADD)", "index -1", "axis 0", "size 2"});
}

TEST(Scatter, ShapeDtypeAndParamErrors) {
    auto data = iota({2, 3});
    expect_error<ShapeError>(
            [&] {
                run1<Scatter>(scatter(0), {data, i32({1, 2}, {0, 0}), iota({2, 1})});
            },
            {"Scatter(axis=0, mode=SET)", "src {2(1),1(1)} float32", "index {1(2),2(1)} int32"});
    expect_error<ShapeError>(
            [&] {
                run1<Scatter>(scatter(0), {data, i32({1, 4}, {0, 0, 0, 0}), iota({1, 4})});
            },
            {"Scatter(axis=0, mode=SET)", "index {1(4),4(1)} int32", "data {2(3),3(1)} float32"});
    expect_error<DTypeError>(
            [&] {
                run1<Scatter>(scatter(0),
                              {data, i32({1, 1}, {0}), HostTensor({1, 1}, dtype::Int32)});
            },
            {"Scatter(axis=0, mode=SET)", "src {1(1),1(1)} int32", "float32"});
    expect_error<DTypeError>(
            [&] {
                run1<Scatter>(scatter(0), {data, iota({1, 1}), iota({1, 1})});
            },
            {"Scatter(axis=0, mode=SET)", "index must be int32"});
    expect_error<ParamError>(
            [&] {
                run1<Scatter>(scatter(-3), {data, i32({1, 1}, {0}), iota({1, 1})});
            },
            {"Scatter(axis=-3, mode=SET)", "axis -3"});
}

TEST(Scatter, BadIndexWritesNothing) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<Scatter>();
    op->param().mode = ADD;
    auto data = iota({3});
    auto index = i32({2}, {0, 3});
    auto src = HostTensor::from({2}, {5, 5});
    TensorND in[] = {data.nd(), index.nd(), src.nd()};
    TensorND out[] = {data.nd()};
    EXPECT_THROW(op->exec(in, out), IndexError);
    EXPECT_EQ(data.values(), (std::vector<double>{0, 1, 2}));
}
