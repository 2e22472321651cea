// The x86 handle: every operator is available (x86 kernels where registered, naive otherwise),
// and operators without an x86 kernel are the naive ones created on the x86 handle.
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(X86, EveryDefinedOperatorIsAvailable) {
    EXPECT_STREQ(handle->name(), "x86");
    EXPECT_EQ(handle->backend(), Backend::X86);
    for (OpType type : kAllOpTypes) {
        ASSERT_TRUE(handle->has_operator(type)) << op_type_name(type);
        auto op = handle->create_operator(type);
        EXPECT_EQ(op->type(), type);
        EXPECT_EQ(op->handle(), handle.get()) << op_type_name(type);
    }
}

TEST_F(X86, OperatorsWithoutAnX86KernelRunNaive) {
    // TakePrefix only views the valid rows of CondTake's and NonZero's outputs: it has no x86
    // kernel of its own.
    auto op = handle->create_operator<TakePrefix>();
    EXPECT_EQ(dynamic_cast<x86::KernelReport*>(op.get()), nullptr);
    HostTensor a = HostTensor::from({3, 2}, {3, 1, 2, 4, 6, 5});
    auto out = run_op(*op, {a, HostTensor::from({1}, {2}, dtype::Int32)}, {{2, 2}});
    EXPECT_EQ(out[0].values(), (std::vector<double>{3, 1, 2, 4}));
}

TEST(X86Handle, WithoutOneDnnIsAClearError) {
    if (Handle::x86_available())
        GTEST_SKIP() << "NeoMeg was built with oneDNN";
    EXPECT_THROW(Handle::make_x86(), NotSupportedError);
}
