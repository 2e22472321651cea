#include "naive/linalg_test_util.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::linalg;

namespace {

HostTensor inverse(const HostTensor& src) {
    return run1<MatrixInverse>({}, {src});
}

// Well-conditioned random matrices: uniform in [-1, 1) plus n on the diagonal.
std::vector<double> well_conditioned(size_t batch, size_t n, std::mt19937& rng) {
    auto v = random_values(batch * n * n, -1, 1, rng);
    for (size_t b = 0; b < batch; ++b)
        for (size_t i = 0; i < n; ++i)
            v[(b * n + i) * n + i] += static_cast<double>(n);
    return v;
}

}  // namespace

TEST(MatrixInverse, HandComputed) {
    // MegEngine's documented example, and the 2x2 formula [[d, -b], [-c, a]] / (ad - bc).
    EXPECT_EQ(inverse(HostTensor::from({2, 2}, {1, 0, 1, 1})).values(),
              (std::vector<double>{1, 0, -1, 1}));
    EXPECT_TRUE(near(inverse(HostTensor::from({2, 2}, {4, 7, 2, 6})).values(),
                     {0.6, -0.7, -0.2, 0.4}, 1e-6));
    // Zeros on the diagonal need the row swaps of partial pivoting.
    EXPECT_EQ(inverse(HostTensor::from({3, 3}, {0, 1, 0, 0, 0, 1, 1, 0, 0})).values(),
              (std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
    EXPECT_EQ(inverse(HostTensor::from({1, 1}, {4})).values(), (std::vector<double>{0.25}));
}

TEST(MatrixInverse, InverseTimesMatrixIsIdentityOverABatch) {
    std::mt19937 rng(81);
    for (auto shape : std::vector<TensorShape>{{5, 5}, {3, 4, 4}, {2, 3, 7, 7}, {1, 1, 1}}) {
        const size_t n = shape[shape.ndim - 1], batch = shape.total_nr_elems() / (n * n);
        auto v = well_conditioned(batch, n, rng);
        auto inv = inverse(HostTensor::from(shape, v));
        EXPECT_EQ(inv.shape().to_string(), shape.to_string());
        auto iv = inv.values();
        for (size_t b = 0; b < batch; ++b) {
            auto a = slice(v, b, n, n), ai = slice(iv, b, n, n);
            EXPECT_TRUE(near(mm(ai, a, n, n, n), identity(n), 1e-5)) << shape.to_string() << b;
            EXPECT_TRUE(near(mm(a, ai, n, n, n), identity(n), 1e-5)) << shape.to_string() << b;
        }
    }
}

TEST(MatrixInverse, EmptyShapes) {
    EXPECT_EQ(inverse(HostTensor({0, 0}, dtype::Float32)).shape().to_string(), "{0,0}");
    EXPECT_EQ(inverse(HostTensor({0, 3, 3}, dtype::Float32)).shape().to_string(), "{0,3,3}");
    EXPECT_EQ(inverse(HostTensor({4, 0, 0}, dtype::Float32)).shape().to_string(), "{4,0,0}");
}

TEST(MatrixInverse, StridedBroadcastAndTransposedInputs) {
    std::mt19937 rng(82);
    // Checker compares strided inputs with their contiguous copies (random matrices are
    // invertible almost surely, and both sides see the same values).
    Checker<MatrixInverse> c(naive_handle());
    c.set_noncontiguous(true).execs({{4, 4}}).execs({{3, 5, 5}});
    c.set_noncontiguous(false);
    c.exec_layouts({TensorLayout({5, 5}, dtype::Float32).dimshuffle({1, 0})});
    c.exec_layouts({TensorLayout({1, 3, 3}, dtype::Float32).broadcast({4, 3, 3})});
    c.exec_layouts({TensorLayout({3, 3}, {-3, 1}, dtype::Float32)});
    // inv(A^T) = inv(A)^T, with A^T read through a transposed view.
    auto v = well_conditioned(1, 6, rng);
    HostTensor at(TensorLayout({6, 6}, dtype::Float32).dimshuffle({1, 0}));
    at.set_values(transpose(v, 6, 6));
    EXPECT_TRUE(near(inverse(at).values(),
                     transpose(inverse(HostTensor::from({6, 6}, v)).values(), 6, 6), 1e-6));
}

TEST(MatrixInverse, WritesIntoStridedOutput) {
    std::mt19937 rng(83);
    auto a = HostTensor::from({2, 4, 4}, well_conditioned(2, 4, rng));
    auto got = std::move(run_into_padded<MatrixInverse>({}, {a})[0]);
    EXPECT_FALSE(got.layout().is_contiguous());
    EXPECT_TRUE(tensors_near(got, inverse(a), 0));
}

TEST(MatrixInverse, LowPrecisionFloats) {
    std::mt19937 rng(84);
    auto v = well_conditioned(1, 4, rng);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto a = HostTensor::from({4, 4}, v, dt);
        auto inv = inverse(a);
        EXPECT_EQ(inv.dtype(), dt);
        // Against the float32 inverse of the values as stored in dt: only output rounding differs.
        auto want = inverse(HostTensor::from({4, 4}, a.values()));
        EXPECT_TRUE(
                tensors_near(inv, HostTensor::from({4, 4}, want.values(), dt), default_epsilon(dt)))
                << dt.name();
    }
}

TEST(MatrixInverse, SingularMatrixThrowsNamingItsBatchIndex) {
    // Matrix 1 of the batch has rank 1: its second pivot is exactly zero.
    auto a = HostTensor::from({3, 2, 2}, {1, 0, 0, 1, 1, 2, 2, 4, 2, 0, 0, 2});
    expect_error<ParamError>([&] { inverse(a); }, {"MatrixInverse()", "matrix 1 of the batch",
                                                   "is singular", "{3(4),2(2),2(1)} float32"});
    expect_error<ParamError>(
            [&] {
                inverse(HostTensor({3, 3}, dtype::Float32));
            },
            {"matrix 0 of the batch", "singular"});
}

TEST(MatrixInverse, NonFiniteMatrixGivesAllNaN) {
    // Only the non-finite matrix of the batch: the other is inverted as usual.
    auto inv = inverse(HostTensor::from({2, 2, 2}, {1, NAN, 0, 1, 2, 0, 0, 4})).values();
    for (size_t i = 0; i < 4; ++i)
        EXPECT_TRUE(std::isnan(inv[i])) << i;
    EXPECT_EQ(slice(inv, 1, 2, 2), (std::vector<double>{0.5, 0, 0, 0.25}));
    for (double x : inverse(HostTensor::from({1, 1}, {INFINITY})).values())
        EXPECT_TRUE(std::isnan(x));
}

TEST(MatrixInverse, RejectsNonSquareAndNonFloat) {
    expect_error<ShapeError>(
            [&] {
                inverse(HostTensor({2, 3}, dtype::Float32));
            },
            {"MatrixInverse()", "square", "{2(3),3(1)} float32"});
    expect_error<ShapeError>([&] { inverse(HostTensor({4}, dtype::Float32)); },
                             {"MatrixInverse()", "square"});
    expect_error<ShapeError>([&] { inverse(HostTensor({2, 3, 2}, dtype::Float32)); }, {"square"});
    expect_error<DTypeError>(
            [&] {
                inverse(HostTensor({2, 2}, dtype::Int32));
            },
            {"MatrixInverse()", "must be float", "int32"});
}
