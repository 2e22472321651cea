// MatrixMul and BatchedMatrixMul on the CUDA handle (cuBLAS) against naive: sizes 1 and primes,
// every transpose pair, float32/float16/bfloat16, column-major (transposed) views, padded rows,
// broadcast batches, TF32 on request, and the cases that go to the staged naive kernel (integer
// dtypes, inner strides other than 1, K = 0).
#include "common/matmul_param.h"
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Mnk {
    size_t m, n, k;
};

const Mnk kSizes[] = {{1, 1, 1},   {1, 1, 7},  {7, 1, 1},    {1, 5, 3},    {3, 5, 7},
                      {13, 1, 11}, {2, 17, 1}, {64, 33, 17}, {31, 37, 129}};

TensorShape a_shape(const Mnk& s, bool ta) {
    return ta ? TensorShape{s.k, s.m} : TensorShape{s.m, s.k};
}
TensorShape b_shape(const Mnk& s, bool tb) {
    return tb ? TensorShape{s.n, s.k} : TensorShape{s.k, s.n};
}
TensorShape batched(size_t batch, const TensorShape& s) {
    return {batch, s[0], s[1]};
}

const DType kFloats[] = {dtype::Float32, dtype::Float16, dtype::BFloat16};

// Float32 products accumulate in float here and in double in naive; K up to 129.
double eps_of(DType dt) {
    return dt == dtype::Float32 ? 1e-4 : (dt == dtype::Float16 ? 3e-3 : 3e-2);
}

}  // namespace

TEST_F(Cuda, MatrixMulMatchesNaive) {
    for (DType dt : kFloats)
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (const Mnk& s : kSizes) {
                    CudaChecker<MatrixMul> c(handle.get());
                    c.set_param(mm_param(ta, tb)).set_dtype(0, dt).set_dtype(1, dt);
                    c.set_epsilon(eps_of(dt)).expect_kernel("cublas");
                    c.execs({a_shape(s, ta), b_shape(s, tb)});
                    // Padded operands (inner stride 2) and output run staged, correctly.
                    c.expect_kernel("").set_noncontiguous(true).execs(
                            {a_shape(s, ta), b_shape(s, tb)});
                }
}

TEST_F(Cuda, MatrixMulViews) {
    CudaChecker<MatrixMul> c(handle.get());
    c.expect_kernel("cublas");
    // A as the transpose view of a (K, M) buffer (column-major), B with padded rows.
    TensorLayout at({5, 4}, dtype::Float32), b({5, 3}, {8, 1}, dtype::Float32);
    c.exec_layouts({at.dimshuffle({1, 0}), b});
    c.set_param(mm_param(true, true))
            .exec_layouts({at, TensorLayout({3, 5}, {1, 3}, dtype::Float32)});
    // A row broadcast over M (stride 0) and B reversed along K: staged.
    c.set_param(mm_param(false, false)).expect_kernel("naive(staged)");
    c.exec_layouts({TensorLayout({6, 5}, {0, 1}, dtype::Float32),
                    TensorLayout({5, 3}, {-3, 1}, dtype::Float32)});
}

TEST_F(Cuda, MatrixMulStagedCases) {
    for (DType dt : {dtype::Int8, dtype::Int16, dtype::Int32}) {
        CudaChecker<MatrixMul> c(handle.get());
        c.set_param(mm_param(false, true)).set_dtype(0, dt).set_dtype(1, dt);
        c.set_range(0, -9, 9).set_range(1, -9, 9).expect_kernel("naive(staged)");
        c.execs({{3, 4}, {5, 4}});
    }
    CudaChecker<MatrixMul> k0(handle.get());
    k0.expect_kernel("naive(staged)").execs({{3, 0}, {0, 4}});
    CudaChecker<MatrixMul> empty(handle.get());
    empty.expect_kernel("cuda:empty").execs({{0, 3}, {3, 4}});
}

TEST_F(Cuda, MatrixMulTf32OnRequest) {
    Handle::set_cuda_allow_tf32(true);
    CudaChecker<MatrixMul> c(handle.get());
    // TF32 keeps 10 mantissa bits of each input.
    c.set_epsilon(5e-3).expect_kernel("cublas:tf32").execs({{64, 17}, {17, 33}});
    Handle::set_cuda_allow_tf32(false);
    c.set_epsilon(1e-4).expect_kernel("cublas").execs({{64, 17}, {17, 33}});
}

TEST_F(Cuda, BatchedMatrixMulMatchesNaive) {
    for (DType dt : kFloats)
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (size_t batch : {1, 3, 7})
                    for (const Mnk& s :
                         {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{13, 1, 11}, Mnk{16, 17, 33}}) {
                        CudaChecker<BatchedMatrixMul> c(handle.get());
                        c.set_param(mm_param(ta, tb)).set_dtype(0, dt).set_dtype(1, dt);
                        c.set_epsilon(eps_of(dt)).expect_kernel("cublas");
                        TensorShape as = batched(batch, a_shape(s, ta)),
                                    bs = batched(batch, b_shape(s, tb));
                        c.execs({as, bs});
                        c.expect_kernel("").set_noncontiguous(true).execs({as, bs});
                    }
}

TEST_F(Cuda, BatchedMatrixMulBroadcastAndPaddedBatches) {
    CudaChecker<BatchedMatrixMul> c(handle.get());
    c.expect_kernel("cublas");
    // B repeated over the batch (stride 0), then padded batches and rows.
    c.exec_layouts({TensorLayout({3, 4, 5}, dtype::Float32),
                    TensorLayout({3, 5, 6}, {0, 6, 1}, dtype::Float32)});
    c.exec_layouts({TensorLayout({3, 4, 4}, {20, 5, 1}, dtype::Float32),
                    TensorLayout({3, 4, 6}, dtype::Float32)});
}

TEST_F(Cuda, DotMatchesNaive) {
    for (DType dt : kFloats) {
        CudaChecker<Dot> c(handle.get());
        c.set_dtype(0, dt).set_dtype(1, dt).set_epsilon(eps_of(dt)).expect_kernel("cublas");
        c.execs({{1}, {1}});
        c.execs({{1000}, {1000}});
        c.set_noncontiguous(true).execs({{77}, {77}});
        // A reversed operand.
        c.set_noncontiguous(false).exec_layouts(
                {TensorLayout({9}, {-1}, dt), TensorLayout({9}, {3}, dt)});
    }
    CudaChecker<Dot> ints(handle.get());
    ints.set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32).set_range(0, -9, 9);
    ints.set_range(1, -9, 9).expect_kernel("naive(staged)").execs({{50}, {50}});
}
