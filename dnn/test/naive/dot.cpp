#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST(Dot, MegEngineDocExampleGivesAScalar) {
    auto a = HostTensor::from({6}, {0, 1, 2, 3, 4, 5});
    auto c = run1<Dot>({}, {a, a});
    EXPECT_EQ(c.shape().ndim, 0u);
    EXPECT_EQ(c.values(), (std::vector<double>{55}));
}

TEST(Dot, MatchesPlainSumAndMatrixMul) {
    std::mt19937 rng(71);
    for (size_t n : {1, 2, 13, 4099}) {
        auto av = random_values(n, -1, 1, rng), bv = random_values(n, -1, 1, rng);
        double want = 0;
        for (size_t i = 0; i < n; ++i)
            want += av[i] * bv[i];
        auto a = HostTensor::from({n}, av), b = HostTensor::from({n}, bv);
        auto got = run1<Dot>({}, {a, b}).values()[0];
        EXPECT_NEAR(got, want, 1e-4 * std::max(1.0, std::abs(want))) << n;
        // The same as a (1, n) x (n, 1) MatrixMul.
        auto row = HostTensor::from({1, n}, av), col = HostTensor::from({n, 1}, bv);
        EXPECT_NEAR(got, run1<MatrixMul>({}, {row, col}).values()[0], 1e-5) << n;
    }
}

TEST(Dot, StridedBroadcastAndNegativeStrideInputs) {
    Checker<Dot> c(naive_handle());
    c.set_noncontiguous(true).execs({{7}, {7}}).set_noncontiguous(false);
    c.exec_layouts(
            {TensorLayout({7}, {-1}, dtype::Float32), TensorLayout({7}, {3}, dtype::Float32)});
    // A scalar broadcast to a vector (stride 0), as F.dot does for a scalar operand.
    c.exec_layouts(
            {TensorLayout({1}, dtype::Float32).broadcast({7}), TensorLayout({7}, dtype::Float32)});
    auto a = HostTensor::from({3}, {1, 2, 3});
    HostTensor rev(TensorLayout({3}, {-1}, dtype::Float32));
    rev.set_values({4, 5, 6});
    EXPECT_EQ(run1<Dot>({}, {a, rev}).values()[0], 32);
}

TEST(Dot, EmptyDtypesAndErrors) {
    EXPECT_EQ(run1<Dot>({}, {HostTensor({0}, dtype::Float32), HostTensor({0}, dtype::Float32)})
                      .values(),
              (std::vector<double>{0}));
    // 3 x 100 x 100 overflows int8 and int16 but not the int32 output.
    for (DType dt : {dtype::Int8, dtype::Int16, dtype::Int32}) {
        auto v = HostTensor::from({3}, {100, 100, 100}, dt);
        auto c = run1<Dot>({}, {v, v});
        EXPECT_EQ(c.dtype(), dtype::Int32);
        EXPECT_EQ(c.values()[0], 30000) << dt.name();
    }
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto h = HostTensor::from({4}, {0.5, 1.5, 2, -1}, dt);
        auto r = run1<Dot>({}, {h, h});
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_EQ(r.values()[0], 7.5);
    }
    HostTensor a({3}, dtype::Float32), b({4}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run1<Dot>({}, {a, b});
            },
            {"Dot()", "1-D of equal length", "{3(1)} float32", "{4(1)} float32"});
    expect_error<ShapeError>(
            [&] {
                run1<Dot>({}, {HostTensor({1, 3}, dtype::Float32), a});
            },
            {"Dot()", "{1(3),3(1)} float32"});
    expect_error<DTypeError>(
            [&] {
                run1<Dot>({}, {a, HostTensor({3}, dtype::Int32)});
            },
            {"Dot()", "unsupported dtypes", "{3(1)} int32"});
}
