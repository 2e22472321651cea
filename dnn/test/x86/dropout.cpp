// DropoutForward and DropoutBackward on the x86 handle against naive, exactly (mask and values):
// drop probabilities 0, 1 and between, sizes 0, 1, not a multiple of the four-element Philox
// block, one past the kernel's chunk of 256 blocks (1025), and above the threading grain (so the
// threads' split must not change the mask); strided
// tensors and other dtypes go to naive.

#include "neomeg/dnn/operators/norm.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Dropout dropout(float p, uint64_t seed) {
    param::Dropout d;
    d.drop_prob = p;
    d.seed = seed;
    return d;
}

}  // namespace

TEST_F(X86, DropoutForwardMatchesNaive) {
    for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f})
        for (const TensorShape& s :
             {TensorShape{0}, TensorShape{1}, TensorShape{7}, TensorShape{13, 17},
              TensorShape{1025}, TensorShape{3, 100003}}) {
            Checker<DropoutForward> c(handle.get());
            c.set_param(dropout(p, 1234567890123ull)).set_epsilon(0).execs({s});
        }
    HostTensor x({64, 100}, dtype::Float32);
    EXPECT_EQ(run_and_compare<DropoutForward>(*handle, dropout(0.3f, 5), {x}, {}, 0), "loop");
}

TEST_F(X86, DropoutBackwardMatchesNaive) {
    for (float p : {0.0f, 0.4f, 1.0f})
        for (const TensorShape& s : {TensorShape{0}, TensorShape{7}, TensorShape{13, 17},
                                     TensorShape{1025}, TensorShape{3, 100003}}) {
            Checker<DropoutBackward> c(handle.get());
            c.set_param(dropout(p, 8)).set_dtype(1, dtype::Uint8).set_range(1, 0, 2);
            c.set_epsilon(0).execs({s, s});
        }
}

TEST_F(X86, DropoutOtherCasesRunNaive) {
    Checker<DropoutForward> c(handle.get());
    c.set_param(dropout(0.4f, 8)).set_epsilon(0);
    c.set_noncontiguous(true).execs({{5, 7}});
    c.set_noncontiguous(false).exec_layouts(
            {TensorLayout({7, 5}, dtype::Float32).dimshuffle({1, 0})});
    c.set_dtype(0, dtype::Float16).execs({{6, 11}});
    HostTensor h({6, 11}, dtype::Float16);
    EXPECT_EQ(run_and_compare<DropoutForward>(*handle, dropout(0.3f, 5), {h}, {}, 1e-3), "naive");
}

// dropout_hwy.cpp's loops at each instruction set this CPU has among AVX-512, AVX2 and Highway's
// emulation and scalar targets (vectors of 8, 4, 2 or 1 elements, then a tail), exactly as naive;
// the targets restored afterwards.
TEST_F(X86, DropoutMatchesNaiveAtEachHighwayTarget) {
#ifdef NEOMEG_WITH_DNNL
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (const TensorShape& s : {TensorShape{1}, TensorShape{11}, TensorShape{1025}}) {
                    Checker<DropoutForward> f(handle.get());
                    f.set_param(dropout(0.3f, 77)).set_epsilon(0).execs({s});
                    Checker<DropoutBackward> b(handle.get());
                    b.set_param(dropout(0.3f, 77)).set_dtype(1, dtype::Uint8).set_range(1, 0, 2);
                    b.set_epsilon(0).execs({s, s});
                }
            });
    EXPECT_GE(ran, 1u);
#endif
}
