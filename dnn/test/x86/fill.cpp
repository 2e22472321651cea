// Fill on the x86 handle against naive: every dtype at sizes 0, 1, primes and above the threading
// grain (the loop), and the padded dst that goes to naive.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Fill fill(float value, DType dt) {
    param::Fill p;
    p.value = value;
    p.dtype = dt.enumv();
    return p;
}

}  // namespace

TEST_F(X86, FillMatchesNaive) {
    for (float v : {0.0f, 1.0f, -2.5f, 3.0e38f})
        for (const TensorShape& s : {TensorShape{0}, TensorShape{1}, TensorShape{7},
                                     TensorShape{13, 17}, TensorShape{3, 100003}}) {
            Checker<Fill> c(handle.get());
            c.set_param(fill(v, dtype::Float32)).set_output_shapes({s}).set_epsilon(0).execs({});
        }
    auto op = handle->create_operator<Fill>();
    op->param() = fill(4.f, dtype::Float32);
    HostTensor dst({5, 3}, dtype::Float32);
    TensorND out = dst.nd();
    op->exec({}, {&out, 1}, {});
    EXPECT_EQ(dst.values(), std::vector<double>(15, 4.0));
    EXPECT_EQ(last_kernel(*op), "loop");
}

TEST_F(X86, FillEveryDtypeMatchesNaive) {
    // Values that round (float16, bfloat16), truncate (integers) or are nonzero (bool).
    for (DType dt : {dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Uint8, dtype::Int16,
                     dtype::Int32, dtype::Bool})
        for (float v : {0.0f, 3.0f, 2.7f, 100.3f})
            for (const TensorShape& s :
                 {TensorShape{0}, TensorShape{1}, TensorShape{6, 11}, TensorShape{3, 100003}}) {
                Checker<Fill> c(handle.get());
                c.set_param(fill(v, dt)).set_output_shapes({s}).set_epsilon(0).execs({});
            }
    auto op = handle->create_operator<Fill>();
    op->param() = fill(-7.9f, dtype::Int32);
    HostTensor dst({4, 5}, dtype::Int32);
    TensorND out = dst.nd();
    op->exec({}, {&out, 1}, {});
    EXPECT_EQ(dst.values(), std::vector<double>(20, -7.0));
    EXPECT_EQ(last_kernel(*op), "loop");
}

TEST_F(X86, FillPaddedDstRunsNaive) {
    Checker<Fill> c(handle.get());
    c.set_param(fill(2.f, dtype::Float32)).set_output_shapes({{5, 7}}).set_epsilon(0);
    c.set_noncontiguous(true).execs({});
}
