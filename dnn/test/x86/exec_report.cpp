// No silent slow path: a float32 op on a naive kernel of the x86 handle warns once per operator
// type, whether the type has no x86 kernel or its kernel declined the case; an op with work in
// another dtype, or with nothing to compute, does not. Under NEOMEG_DEBUG=1 (the ctest entry
// dnn.x86.debug) every op prints its params, layouts and kernel.
#include <cstdlib>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/exec_report.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

size_t count(const std::string& s, const std::string& needle) {
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1))
        ++n;
    return n;
}

// TakePrefix has no x86 kernel (it views the valid rows of CondTake's and NonZero's outputs): its
// first `rows` rows of a (4, 3) src of `dtype`.
std::vector<HostTensor> take_prefix(OperatorBase& op, std::mt19937& rng, DType dtype,
                                    size_t rows = 2) {
    HostTensor src({4, 3}, dtype), count = HostTensor::from({1}, {double(rows)}, dtype::Int32);
    fill_uniform(src, -1, 1, rng);
    return run_op(op, {src, count}, {{rows, 3}});
}

}  // namespace

TEST_F(X86, NaiveFloat32OpWarnsOncePerOperator) {
    std::mt19937 rng(43);
    x86::forget_naive_warnings();
    auto op = handle->create_operator<TakePrefix>();
    testing::internal::CaptureStderr();
    take_prefix(*op, rng, dtype::Float32);
    take_prefix(*op, rng, dtype::Float32, 3);
    // A second operator object of the same type stays quiet too.
    auto again = handle->create_operator<TakePrefix>();
    take_prefix(*again, rng, dtype::Float32);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "warning: TakePrefix"), 1u) << err;
    EXPECT_NE(err.find("naive"), std::string::npos) << err;
}

TEST_F(X86, DeclinedFloat32CaseWarns) {
    std::mt19937 rng(47);
    x86::forget_naive_warnings();
    // A per-element bias is not the primitive's per-channel one: ConvBias runs naive.
    param::ConvBias p;
    std::vector<HostTensor> in{random_tensor({1, 2, 5, 5}, rng), random_tensor({3, 2, 3, 3}, rng),
                               random_tensor({1, 3, 3, 3}, rng),
                               HostTensor(TensorLayout(TensorShape{}, dtype::Float32))};
    testing::internal::CaptureStderr();
    std::string kernel = run_and_compare<ConvBias>(*handle, p, in);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(kernel, "naive");
    EXPECT_EQ(count(err, "warning: ConvBias"), 1u) << err;
}

TEST_F(X86, FastKernelsEmptyOpsAndOtherDtypesDoNotWarn) {
    std::mt19937 rng(53);
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    // oneDNN runs it.
    auto conv = conv_param({1, 1}, {1, 1}, {1, 1});
    run_and_compare<ConvolutionForward>(
            *handle, conv, {random_tensor({2, 3, 6, 6}, rng), random_tensor({4, 3, 3, 3}, rng)});
    // Naive, but nothing to compute.
    run_and_compare<ConvolutionForward>(
            *handle, conv,
            {HostTensor({0, 3, 6, 6}, dtype::Float32), random_tensor({4, 3, 3, 3}, rng)});
    // Naive, not float32.
    auto take = handle->create_operator<TakePrefix>();
    take_prefix(*take, rng, dtype::Float16);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
}

TEST_F(X86, DebugSwitchPrintsEveryOp) {
    const char* env = std::getenv("NEOMEG_DEBUG");
    if (!env || std::string(env) != "1")
        GTEST_SKIP() << "runs under NEOMEG_DEBUG=1 (ctest dnn.x86.debug)";
    std::mt19937 rng(59);
    auto conv = conv_param({2, 1}, {1, 0}, {1, 1});
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv;
    auto take = handle->create_operator<TakePrefix>();
    testing::internal::CaptureStderr();
    run_op(*op, {random_tensor({2, 3, 7, 6}, rng), random_tensor({4, 3, 3, 3}, rng)});
    run_op(*op, {random_tensor({2, 3, 7, 6}, rng), random_tensor({4, 3, 3, 3}, rng)});
    take_prefix(*take, rng, dtype::Float32);
    std::string err = testing::internal::GetCapturedStderr();
    // One line per run, with the params, the layouts and the kernel.
    EXPECT_EQ(count(err, "neomeg x86: ConvolutionForward("), 2u) << err;
    EXPECT_NE(err.find(param::to_string(conv)), std::string::npos) << err;
    EXPECT_NE(err.find("{2(126),3(42),7(6),6(1)} float32"), std::string::npos) << err;
    EXPECT_NE(err.find("kernel onednn:"), std::string::npos) << err;
    EXPECT_NE(err.find("neomeg x86: TakePrefix"), std::string::npos) << err;
    EXPECT_NE(err.find("kernel naive"), std::string::npos) << err;
}
