// The x86 handle: every operator is available (x86 kernels where registered, naive otherwise),
// and operators without an x86 kernel are the naive ones created on the x86 handle.
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(X86, EveryDefinedOperatorIsAvailable) {
    EXPECT_STREQ(handle->name(), "x86");
    EXPECT_EQ(handle->backend(), Backend::X86);
    for (size_t i = 0; i < kNumOpTypes; ++i) {
        auto type = static_cast<OpType>(i);
        ASSERT_TRUE(handle->has_operator(type)) << op_type_name(type);
        auto op = handle->create_operator(type);
        EXPECT_EQ(op->type(), type);
        EXPECT_EQ(op->handle(), handle.get()) << op_type_name(type);
    }
}

TEST_F(X86, OperatorsWithoutAnX86KernelRunNaive) {
    auto op = handle->create_operator<Elemwise>();
    EXPECT_EQ(dynamic_cast<x86::KernelReport*>(op.get()), nullptr);
    param::Elemwise p;
    p.mode = param::Elemwise::Mode::ADD;
    std::mt19937 rng(3);
    HostTensor a({2, 3}, dtype::Float32), b({2, 3}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    op->param() = p;
    auto sum = run_op(*op, {a, b})[0];
    auto va = a.values(), vb = b.values(), vs = sum.values();
    for (size_t i = 0; i < vs.size(); ++i)
        EXPECT_FLOAT_EQ(static_cast<float>(vs[i]), static_cast<float>(va[i] + vb[i]));
}

TEST(X86Handle, WithoutOneDnnIsAClearError) {
    if (Handle::x86_available())
        GTEST_SKIP() << "NeoMeg was built with oneDNN";
    EXPECT_THROW(Handle::make_x86(), NotSupportedError);
}
