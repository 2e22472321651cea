#include "common/matmul_param.h"
#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// A second formulation: C = sum over p of the outer product of column p of A and row p of B,
// from row-major values of A (M, K) and B (K, N), in double.
std::vector<double> outer_product_sum(const std::vector<double>& a, const std::vector<double>& b,
                                      size_t m, size_t k, size_t n) {
    std::vector<double> c(m * n, 0);
    for (size_t p = 0; p < k; ++p)
        for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; ++j)
                c[i * n + j] += a[i * k + p] * b[p * n + j];
    return c;
}

// Row-major values of the transpose of a (rows, cols) matrix.
std::vector<double> transposed(const std::vector<double>& v, size_t rows, size_t cols) {
    std::vector<double> t(v.size());
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j)
            t[j * rows + i] = v[i * cols + j];
    return t;
}

}  // namespace

TEST(MatrixMul, MegEngineDocExample) {
    auto a = HostTensor::from({2, 3}, {0, 1, 2, 3, 4, 5});
    auto b = HostTensor::from({3, 2}, {0, 1, 2, 3, 4, 5});
    auto c = run1<MatrixMul>(mm_param(false, false), {a, b});
    EXPECT_EQ(c.layout().to_string(), "{2(2),2(1)} float32");
    EXPECT_EQ(c.values(), (std::vector<double>{10, 13, 28, 40}));
}

TEST(MatrixMul, MatchesOuterProductSumForEveryTranspose) {
    std::mt19937 rng(51);
    for (auto [m, k, n] : std::vector<std::array<size_t, 3>>{{5, 7, 3}, {1, 13, 1}, {11, 1, 2}}) {
        auto av = random_values(m * k, -1, 1, rng), bv = random_values(k * n, -1, 1, rng);
        auto want = HostTensor::from({m, n}, outer_product_sum(av, bv, m, k, n));
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                auto a = ta ? HostTensor::from({k, m}, transposed(av, m, k))
                            : HostTensor::from({m, k}, av);
                auto b = tb ? HostTensor::from({n, k}, transposed(bv, k, n))
                            : HostTensor::from({k, n}, bv);
                EXPECT_TRUE(tensors_near(run1<MatrixMul>(mm_param(ta, tb), {a, b}), want, 1e-5))
                        << m << "x" << k << "x" << n << " ta " << ta << " tb " << tb;
            }
    }
}

TEST(MatrixMul, TransposedViewEqualsTransposeFlag) {
    // A^T read through a dimshuffled (column-major) view with transposeA=false must give what
    // the transposeA flag gives on A itself.
    std::mt19937 rng(52);
    auto a = HostTensor::from({4, 6}, random_values(24, -1, 1, rng));
    auto b = HostTensor::from({4, 5}, random_values(20, -1, 1, rng));
    HostTensor a_t(TensorLayout({4, 6}, dtype::Float32).dimshuffle({1, 0}));
    a_t.set_values(transposed(a.values(), 4, 6));
    EXPECT_FALSE(a_t.layout().is_contiguous());
    EXPECT_TRUE(tensors_near(run1<MatrixMul>(mm_param(false, false), {a_t, b}),
                             run1<MatrixMul>(mm_param(true, false), {a, b}), 1e-6));
}

TEST(MatrixMul, StridedBroadcastAndNegativeStrideInputs) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Checker<MatrixMul> c(naive_handle());
            c.set_param(mm_param(ta, tb)).set_noncontiguous(true).execs({{5, 5}, {5, 5}});
            TensorShape as = ta ? TensorShape{7, 3} : TensorShape{3, 7};
            TensorShape bs = tb ? TensorShape{2, 7} : TensorShape{7, 2};
            c.execs({as, bs});
            c.set_noncontiguous(false);
            TensorLayout a({6, 6}, dtype::Float32), b({6, 6}, dtype::Float32);
            c.exec_layouts({a.dimshuffle({1, 0}), b});
            c.exec_layouts({TensorLayout({1, 6}, dtype::Float32).broadcast({6, 6}),
                            TensorLayout({6, 1}, dtype::Float32).broadcast({6, 6})});
            c.exec_layouts({TensorLayout({6, 6}, {-6, 1}, dtype::Float32),
                            TensorLayout({6, 6}, {1, -6}, dtype::Float32)});
        }
}

TEST(MatrixMul, WritesIntoStridedOutput) {
    std::mt19937 rng(53);
    auto a = HostTensor::from({3, 4}, random_values(12, -1, 1, rng));
    auto b = HostTensor::from({4, 5}, random_values(20, -1, 1, rng));
    auto got = std::move(run_into_padded<MatrixMul>(mm_param(false, false), {a, b})[0]);
    EXPECT_FALSE(got.layout().is_contiguous());
    EXPECT_TRUE(tensors_near(got, run1<MatrixMul>(mm_param(false, false), {a, b}), 0));
}

TEST(MatrixMul, EdgeShapes) {
    // K = 0: every element is an empty sum.
    auto z = run1<MatrixMul>(mm_param(false, false), {HostTensor({2, 0}, dtype::Float32),
                                                      HostTensor({0, 3}, dtype::Float32)});
    EXPECT_EQ(z.values(), std::vector<double>(6, 0));
    auto e = run1<MatrixMul>(mm_param(false, true), {HostTensor({0, 4}, dtype::Float32),
                                                     HostTensor({3, 4}, dtype::Float32)});
    EXPECT_EQ(e.shape().to_string(), "{0,3}");
    auto one = run1<MatrixMul>(mm_param(false, false),
                               {HostTensor::from({1, 1}, {3}), HostTensor::from({1, 1}, {-2})});
    EXPECT_EQ(one.values()[0], -6);
    // A largish prime-sized case against the outer-product formulation.
    std::mt19937 rng(54);
    size_t m = 67, k = 131, n = 61;
    auto av = random_values(m * k, -1, 1, rng), bv = random_values(k * n, -1, 1, rng);
    EXPECT_TRUE(tensors_near(
            run1<MatrixMul>(mm_param(false, false),
                            {HostTensor::from({m, k}, av), HostTensor::from({k, n}, bv)}),
            HostTensor::from({m, n}, outer_product_sum(av, bv, m, k, n)), 1e-4));
}

TEST(MatrixMul, LowPrecisionFloats) {
    std::mt19937 rng(55);
    size_t m = 9, k = 33, n = 7;
    auto av = random_values(m * k, -1, 1, rng), bv = random_values(k * n, -1, 1, rng);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto a = HostTensor::from({m, k}, av, dt), b = HostTensor::from({k, n}, bv, dt);
        auto c = run1<MatrixMul>(mm_param(false, false), {a, b});
        EXPECT_EQ(c.dtype(), dt);
        // Reference from the values as stored in dt, so only the output rounding differs.
        auto want =
                HostTensor::from({m, n}, outer_product_sum(a.values(), b.values(), m, k, n), dt);
        EXPECT_TRUE(tensors_near(c, want, default_epsilon(dt))) << dt.name();
        Checker<MatrixMul>(naive_handle())
                .set_dtype(0, dt)
                .set_dtype(1, dt)
                .set_param(mm_param(true, true))
                .set_noncontiguous(true)
                .execs({{5, 3}, {4, 5}});
    }
}

TEST(MatrixMul, IntegersGiveInt32) {
    // 100 * 100 * 3 overflows int8 and int16 but not int32.
    for (DType dt : {dtype::Int8, dtype::Int16, dtype::Int32}) {
        auto a = HostTensor::from({1, 3}, {100, 100, -100}, dt);
        auto b = HostTensor::from({3, 2}, {100, 1, 100, 2, -100, 3}, dt);
        auto c = run1<MatrixMul>(mm_param(false, false), {a, b});
        EXPECT_EQ(c.dtype(), dtype::Int32);
        EXPECT_EQ(c.values(), (std::vector<double>{30000, 0})) << dt.name();
    }
    std::mt19937 rng(56);
    auto av = random_values(4 * 6, -50, 50, rng, true),
         bv = random_values(6 * 3, -50, 50, rng, true);
    auto c = run1<MatrixMul>(mm_param(false, false), {HostTensor::from({4, 6}, av, dtype::Int8),
                                                      HostTensor::from({6, 3}, bv, dtype::Int8)});
    EXPECT_EQ(c.values(), outer_product_sum(av, bv, 4, 6, 3));
}

TEST(MatrixMul, RejectsBadShapesAndDtypes) {
    HostTensor a({2, 3}, dtype::Float32), b({4, 5}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run<MatrixMul>(mm_param(false, false), {a, b});
            },
            {"MatrixMul(transposeA=false, transposeB=false, compute_mode=DEFAULT)",
             "inner dims differ", "{2(3),3(1)} float32", "{4(5),5(1)} float32"});
    expect_error<ShapeError>(
            [&] {
                run<MatrixMul>(mm_param(false, false), {HostTensor({2, 3, 1}, dtype::Float32), b});
            },
            {"MatrixMul(", "must be 2-D", "{2(3),3(1),1(1)} float32"});
    HostTensor h({3, 4}, dtype::Float16);
    expect_error<DTypeError>(
            [&] {
                run<MatrixMul>(mm_param(false, false), {a, h});
            },
            {"MatrixMul(", "unsupported dtypes", "float32", "{3(4),4(1)} float16"});
    HostTensor u({3, 2}, dtype::Uint8), u2({2, 3}, dtype::Uint8);
    expect_error<DTypeError>(
            [&] {
                run<MatrixMul>(mm_param(false, false), {u, u2});
            },
            {"MatrixMul(", "uint8"});
    HostTensor bo({3, 2}, dtype::Bool), bo2({2, 3}, dtype::Bool);
    expect_error<DTypeError>(
            [&] {
                run<MatrixMul>(mm_param(false, false), {bo, bo2});
            },
            {"MatrixMul(", "bool"});
}

TEST(MatrixMul, GradientsAreMatrixMulsWithTransposeFlags) {
    // The backward rules dA = dC @ B^T and dB = A^T @ dC use the transpose flags; finite
    // differences of the forward op confirm them.
    std::mt19937 rng(57);
    auto a = HostTensor::from({3, 4}, random_values(12, -1, 1, rng));
    auto b = HostTensor::from({4, 5}, random_values(20, -1, 1, rng));
    auto dc = HostTensor::from({3, 5}, random_values(15, -1, 1, rng));
    auto f = [](const std::vector<HostTensor>& in) {
        return run1<MatrixMul>(mm_param(false, false), in);
    };
    EXPECT_TRUE(tensors_near(numeric_grad(f, {a, b}, 0, dc),
                             run1<MatrixMul>(mm_param(false, true), {dc, b}), 1e-3));
    EXPECT_TRUE(tensors_near(numeric_grad(f, {a, b}, 1, dc),
                             run1<MatrixMul>(mm_param(true, false), {a, dc}), 1e-3));
}
