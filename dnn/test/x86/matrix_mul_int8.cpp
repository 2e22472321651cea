// MatrixMul and BatchedMatrixMul on int8 (Int8 into Int32, QuantizedS8 into QuantizedS32) on the
// x86 handle (the integer GEMM of gemm_s16_hwy.h) against naive, exactly: sizes 1, primes, odd K
// (1001 among them, over two of the GEMM's blocks) and K = 4608, every transpose pair, padded
// operands and outputs, random and extreme values (all -128 or 127), and a K long enough that the
// int32 sums wrap (as naive's truncated ones do).
#include "common/matmul_param.h"
#include "neomeg/dnn/operators/linalg.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Mnk {
    size_t m, n, k;
};

const Mnk kSizes[] = {{1, 1, 1},   {1, 1, 7},    {7, 1, 1},     {1, 5, 3},     {3, 5, 7},
                      {13, 1, 11}, {64, 33, 17}, {31, 37, 129}, {5, 70, 4608}, {6, 21, 1001}};

TensorShape a_shape(const Mnk& s, bool ta) {
    return ta ? TensorShape{s.k, s.m} : TensorShape{s.m, s.k};
}
TensorShape b_shape(const Mnk& s, bool tb) {
    return tb ? TensorShape{s.n, s.k} : TensorShape{s.k, s.n};
}

const DType kA[] = {dtype::Int8, DType::quantized_s8(0.5f)};
const DType kB[] = {dtype::Int8, DType::quantized_s8(0.25f)};

}  // namespace

TEST_F(X86, Int8MatrixMulMatchesNaive) {
    for (size_t d = 0; d < 2; ++d)
        for (const Mnk& s : kSizes)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    Checker<MatrixMul> c(handle.get());
                    c.set_param(mm_param(ta, tb)).set_dtype(0, kA[d]).set_dtype(1, kB[d]);
                    c.set_range(0, -128, 128).set_range(1, -128, 128).set_epsilon(0);
                    c.execs({a_shape(s, ta), b_shape(s, tb)});
                    c.set_noncontiguous(true).execs({a_shape(s, ta), b_shape(s, tb)});
                }
}

TEST_F(X86, Int8MatrixMulExtremeValuesMatchNaive) {
    for (const Mnk& s : {Mnk{9, 19, 4608}, Mnk{3, 17, 5}, Mnk{1, 2, 140001}})
        for (double av : {-128.0, 127.0})
            for (double bv : {-128.0, 127.0}) {
                Checker<MatrixMul> c(handle.get());
                c.set_param(mm_param(false, true)).set_dtype(0, kA[1]).set_dtype(1, kB[1]);
                c.set_values(0, std::vector<double>(s.m * s.k, av));
                c.set_values(1, std::vector<double>(s.n * s.k, bv)).set_epsilon(0);
                c.execs({a_shape(s, false), b_shape(s, true)});
            }
}

TEST_F(X86, Int8BatchedMatrixMulMatchesNaive) {
    for (size_t d = 0; d < 2; ++d)
        for (const Mnk& s : kSizes)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    Checker<BatchedMatrixMul> c(handle.get());
                    c.set_param(mm_param(ta, tb)).set_dtype(0, kA[d]).set_dtype(1, kB[d]);
                    c.set_range(0, -128, 128).set_range(1, -128, 128).set_epsilon(0);
                    TensorShape a = a_shape(s, ta), b = b_shape(s, tb);
                    c.execs({{3, a[0], a[1]}, {3, b[0], b[1]}});
                    c.set_noncontiguous(true).execs({{2, a[0], a[1]}, {2, b[0], b[1]}});
                }
}
