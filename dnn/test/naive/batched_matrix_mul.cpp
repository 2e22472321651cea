#include "common/matmul_param.h"
#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Row-major values of matrix i of a (batch, rows, cols) tensor.
std::vector<double> slice(const std::vector<double>& v, size_t i, size_t rows, size_t cols) {
    auto begin = v.begin() + static_cast<ptrdiff_t>(i * rows * cols);
    return {begin, begin + static_cast<ptrdiff_t>(rows * cols)};
}

}  // namespace

TEST(BatchedMatrixMul, HandComputed) {
    auto a = HostTensor::from({2, 1, 2}, {1, 2, 3, 4});
    auto b = HostTensor::from({2, 2, 1}, {5, 6, 7, 8});
    auto c = run1<BatchedMatrixMul>(mm_param(false, false), {a, b});
    EXPECT_EQ(c.shape().to_string(), "{2,1,1}");
    EXPECT_EQ(c.values(), (std::vector<double>{17, 53}));
}

TEST(BatchedMatrixMul, EqualsMatrixMulPerBatch) {
    std::mt19937 rng(61);
    size_t batch = 3, m = 4, k = 5, n = 2;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            TensorShape as = ta ? TensorShape{batch, k, m} : TensorShape{batch, m, k};
            TensorShape bs = tb ? TensorShape{batch, n, k} : TensorShape{batch, k, n};
            auto av = random_values(as.total_nr_elems(), -1, 1, rng);
            auto bv = random_values(bs.total_nr_elems(), -1, 1, rng);
            auto c = run1<BatchedMatrixMul>(mm_param(ta, tb),
                                            {HostTensor::from(as, av), HostTensor::from(bs, bv)});
            auto cv = c.values();
            for (size_t i = 0; i < batch; ++i) {
                auto ai = HostTensor::from({as[1], as[2]}, slice(av, i, as[1], as[2]));
                auto bi = HostTensor::from({bs[1], bs[2]}, slice(bv, i, bs[1], bs[2]));
                auto want = run1<MatrixMul>(mm_param(ta, tb), {ai, bi});
                EXPECT_TRUE(tensors_near(HostTensor::from({m, n}, slice(cv, i, m, n)), want, 1e-6))
                        << "batch " << i << " ta " << ta << " tb " << tb;
            }
        }
}

TEST(BatchedMatrixMul, StridedBroadcastAndNegativeStrideInputs) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Checker<BatchedMatrixMul> c(naive_handle());
            c.set_param(mm_param(ta, tb)).set_noncontiguous(true).execs({{3, 4, 4}, {3, 4, 4}});
            c.set_noncontiguous(false);
            TensorLayout a({4, 3, 4}, dtype::Float32), b({3, 4, 4}, dtype::Float32);
            c.exec_layouts({a.dimshuffle({1, 2, 0}), b});
            // One B shared by every batch (stride 0), as F.matmul's broadcasting produces.
            c.exec_layouts({a.dimshuffle({1, 0, 2}),
                            TensorLayout({1, 4, 4}, dtype::Float32).broadcast({3, 4, 4})});
            c.exec_layouts({TensorLayout({3, 4, 4}, {-16, 4, 1}, dtype::Float32),
                            TensorLayout({3, 4, 4}, {16, -1, 4}, dtype::Float32)});
        }
    std::mt19937 rng(62);
    auto a = HostTensor::from({2, 3, 4}, random_values(24, -1, 1, rng));
    auto b = HostTensor::from({2, 4, 5}, random_values(40, -1, 1, rng));
    auto got = std::move(run_into_padded<BatchedMatrixMul>(mm_param(false, false), {a, b})[0]);
    EXPECT_TRUE(tensors_near(got, run1<BatchedMatrixMul>(mm_param(false, false), {a, b}), 0));
}

TEST(BatchedMatrixMul, EdgeShapesAndDtypes) {
    auto e = run1<BatchedMatrixMul>(
            mm_param(false, false),
            {HostTensor({0, 2, 3}, dtype::Float32), HostTensor({0, 3, 4}, dtype::Float32)});
    EXPECT_EQ(e.shape().to_string(), "{0,2,4}");
    auto z = run1<BatchedMatrixMul>(
            mm_param(false, false),
            {HostTensor({2, 2, 0}, dtype::Float32), HostTensor({2, 0, 3}, dtype::Float32)});
    EXPECT_EQ(z.values(), std::vector<double>(12, 0));
    Checker<BatchedMatrixMul> c(naive_handle());
    c.execs({{1, 1, 1}, {1, 1, 1}})
            .execs({{7, 11, 13}, {7, 13, 5}})
            .execs({{16, 64, 33}, {16, 33, 17}});
    for (DType dt : {dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int16, dtype::Int32}) {
        Checker<BatchedMatrixMul> cd(naive_handle());
        cd.set_dtype(0, dt).set_dtype(1, dt).set_range(0, -8, 8).set_range(1, -8, 8);
        cd.set_param(mm_param(true, false)).set_noncontiguous(true).execs({{2, 5, 3}, {2, 5, 4}});
    }
    auto i8 = run1<BatchedMatrixMul>(mm_param(false, false),
                                     {HostTensor::from({1, 1, 2}, {127, 127}, dtype::Int8),
                                      HostTensor::from({1, 2, 1}, {127, 127}, dtype::Int8)});
    EXPECT_EQ(i8.dtype(), dtype::Int32);
    EXPECT_EQ(i8.values()[0], 2 * 127 * 127);
}

TEST(BatchedMatrixMul, RejectsBadShapesAndDtypes) {
    HostTensor a({2, 3, 4}, dtype::Float32), b({3, 4, 5}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run<BatchedMatrixMul>(mm_param(false, false), {a, b});
            },
            {"BatchedMatrixMul(transposeA=false", "batch sizes differ", "{2(12),3(4),4(1)} float32",
             "{3(20),4(5),5(1)} float32"});
    HostTensor b2({2, 5, 4}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run<BatchedMatrixMul>(mm_param(false, false), {a, b2});
            },
            {"BatchedMatrixMul(", "inner dims differ", "K=4", "K=5"});
    expect_error<ShapeError>(
            [&] {
                run<BatchedMatrixMul>(mm_param(false, false),
                                      {HostTensor({3, 4}, dtype::Float32), b});
            },
            {"BatchedMatrixMul(", "must be 3-D", "{3(4),4(1)} float32"});
    HostTensor bi({2, 4, 5}, dtype::Int32);
    expect_error<DTypeError>(
            [&] {
                run<BatchedMatrixMul>(mm_param(false, false), {a, bi});
            },
            {"BatchedMatrixMul(", "unsupported dtypes", "int32"});
}
