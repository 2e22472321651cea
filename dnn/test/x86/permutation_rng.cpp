// PermutationRNG on the x86 handle against naive, bit for bit (the same permutation for a seed):
// lengths 0, 1, odd (half a Philox block) and above the threading grain, several seeds, int32 and
// float32, strided dsts; and that the result is a permutation.
#include <algorithm>
#include <numeric>

#include "neomeg/dnn/operators/random.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::PermutationRNG perm_param(uint64_t seed, DTypeEnum dt) {
    param::PermutationRNG p;
    p.seed = seed;
    p.dtype = dt;
    return p;
}

}  // namespace

TEST_F(X86, PermutationRNGMatchesNaiveBitForBit) {
    for (uint64_t seed : {0ull, 5ull, 1234567890123ull, ~0ull})
        for (DTypeEnum dt : {DTypeEnum::Int32, DTypeEnum::Float32})
            for (size_t n :
                 {size_t(0), size_t(1), size_t(2), size_t(7), size_t(1000), size_t(300001)}) {
                Checker<PermutationRNG> c(handle.get());
                c.set_param(perm_param(seed, dt)).set_epsilon(0).set_output_shapes({{n}});
                c.execs({});
                c.set_noncontiguous(true).execs({});
            }
}

TEST_F(X86, PermutationRNGIsAPermutation) {
    auto op = handle->create_operator<PermutationRNG>();
    op->param() = perm_param(42, DTypeEnum::Int32);
    auto got = run_op(*op, {}, {{100003}});
    EXPECT_EQ(last_kernel(*op), "vqsort");
    auto v = got[0].values();
    std::sort(v.begin(), v.end());
    std::vector<double> want(v.size());
    std::iota(want.begin(), want.end(), 0.0);
    EXPECT_EQ(v, want);
}
