// UniformRNG, GaussianRNG, DropoutForward/Backward and CheckNonFinite on the CUDA handle: the same
// numbers as the naive kernels for a seed (uniform values and dropout masks bit for bit), in every
// float dtype, through strided outputs; CheckNonFinite on finite inputs, NaN, infinities and
// several inputs.
#include <cmath>
#include <limits>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/random.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {
const DType kFloats[] = {dtype::Float32, dtype::Float16, dtype::BFloat16};
}  // namespace

TEST_F(Cuda, UniformRNGIsTheCpuStream) {
    for (DType dt : kFloats)
        for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{1} << 40}) {
            param::UniformRNG p;
            p.seed = seed;
            p.dtype = dt.enumv();
            CudaChecker<UniformRNG> c(handle.get());
            c.set_param(p).set_epsilon(0).expect_kernel("cuda");
            c.set_output_shapes({{1000, 37}}).execs({});
            c.set_noncontiguous(true).set_output_shapes({{5, 6, 7}}).execs({});
        }
}

TEST_F(Cuda, GaussianRNGIsTheCpuStream) {
    for (DType dt : kFloats) {
        param::GaussianRNG p;
        p.seed = 7;
        p.mean = 1.5f;
        p.std = 3;
        p.dtype = dt.enumv();
        CudaChecker<GaussianRNG> c(handle.get());
        // The GPU's logf/sinf/cosf are within two ulp of the host's.
        c.set_param(p).expect_kernel("cuda");
        if (dt == dtype::Float32)
            c.set_epsilon(1e-6);
        c.set_output_shapes({{4097}}).execs({});
        c.set_noncontiguous(true).set_output_shapes({{3, 9}}).execs({});
    }
}

TEST_F(Cuda, PermutationRNGIsTheCpuPermutation) {
    for (DType dt : {dtype::Int32, dtype::Float32})
        for (uint64_t seed : {uint64_t{0}, uint64_t{5}}) {
            param::PermutationRNG p;
            p.seed = seed;
            p.dtype = dt.enumv();
            CudaChecker<PermutationRNG> c(handle.get());
            c.set_param(p).set_epsilon(0).expect_kernel("cuda:cub");
            for (size_t n : {1, 2, 1000, 100003})
                c.set_output_shapes({{n}}).execs({});
            c.set_noncontiguous(true).set_output_shapes({{77}}).execs({});
        }
}

TEST_F(Cuda, DropoutIsTheCpuMask) {
    for (DType dt : kFloats)
        for (float prob : {0.f, 0.3f, 1.f}) {
            param::Dropout p;
            p.drop_prob = prob;
            p.seed = 99;
            CudaChecker<DropoutForward> f(handle.get());
            f.set_param(p).set_dtype(0, dt).expect_kernel("cuda");
            f.execs({{64, 65}});
            f.set_noncontiguous(true).execs({{4, 5, 6}});
            CudaChecker<DropoutBackward> b(handle.get());
            b.set_param(p).set_dtype(0, dt).set_dtype(1, dtype::Uint8).set_range(1, 0, 2);
            b.expect_kernel("cuda").execs({{64, 65}, {64, 65}});
            b.set_noncontiguous(true).execs({{4, 5, 6}, {4, 5, 6}});
        }
}

TEST_F(Cuda, CheckNonFinite) {
    double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    for (DType dt : kFloats) {
        CudaChecker<CheckNonFinite> c(handle.get());
        c.set_dtype(0, dt).set_dtype(1, dt).expect_kernel("cuda");
        c.execs({{100, 3}, {7}});
        c.set_values(1, {1, 2, nan, 4, 5, 6, 7}).execs({{100, 3}, {7}});
        c.set_values(1, {1, 2, 3, -inf, 5, 6, 7}).execs({{100, 3}, {7}});
        c.set_values(1, {1, 2, 3, 4, 5, 6, 7}).set_noncontiguous(true).execs({{5, 3}, {7}});
    }
}
