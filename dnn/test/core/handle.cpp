// The naive handle runs every operator the definitions declare.
#include <gtest/gtest.h>

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"

using namespace neomeg::dnn;

TEST(NaiveHandle, EveryDefinedOperatorIsImplemented) {
    auto handle = Handle::make_naive();
    std::vector<std::string> missing;
    for (OpType type : kAllOpTypes) {
        if (!handle->has_operator(type))
            missing.push_back(op_type_name(type));
        else
            EXPECT_EQ(handle->create_operator(type)->type(), type);
    }
    EXPECT_TRUE(missing.empty()) << "naive kernels missing for " << missing.size()
                                 << " ops, first: " << (missing.empty() ? "" : missing[0]);
}

// In every build: without CUDA support or without a GPU, asking for the CUDA handle says so.
TEST(CudaHandle, UnavailableIsAClearError) {
    if (Handle::cuda_available())
        GTEST_SKIP() << "a CUDA device is present";
    EXPECT_THROW(Handle::make_cuda(0, nullptr), NotSupportedError);
}

TEST(CudaHandle, Tf32IsOffByDefaultAndSwitchable) {
    EXPECT_FALSE(Handle::cuda_allow_tf32());
    Handle::set_cuda_allow_tf32(true);
    EXPECT_TRUE(Handle::cuda_allow_tf32());
    Handle::set_cuda_allow_tf32(false);
    EXPECT_FALSE(Handle::cuda_allow_tf32());
}

TEST(NaiveHandle, TypedCreateGivesTheRequestedClass) {
    auto handle = Handle::make_naive();
    auto fill = handle->create_operator<Fill>();
    EXPECT_STREQ(fill->name(), "Fill");
    EXPECT_EQ(fill->handle(), handle.get());
    EXPECT_STREQ(handle->name(), "naive");
}

TEST(Fill, WritesValueIntoStridedView) {
    auto handle = Handle::make_naive();
    auto fill = handle->create_operator<Fill>();
    fill->param().value = 2.5f;
    std::vector<float> buf(12, -1.f);
    // every second column of a 3x4 matrix
    TensorLayout view({3, 2}, {4, 2}, dtype::Float32);
    TensorND dst(buf.data(), view);
    fill->exec({}, {&dst, 1});
    for (size_t i = 0; i < 12; ++i)
        EXPECT_EQ(buf[i], (i % 2 == 0) ? 2.5f : -1.f) << i;
}

TEST(Fill, ConvertsToTheParamDtype) {
    auto handle = Handle::make_naive();
    auto fill = handle->create_operator<Fill>();
    fill->param().value = 3.75f;
    fill->param().dtype = DTypeEnum::Int32;
    std::vector<int32_t> buf(5, 0);
    TensorND dst(buf.data(), TensorLayout({5}, dtype::Int32));
    fill->exec({}, {&dst, 1});
    EXPECT_EQ(buf, std::vector<int32_t>(5, 3));
}

TEST(Fill, MismatchedOutputDtypeIsAClearError) {
    auto handle = Handle::make_naive();
    auto fill = handle->create_operator<Fill>();
    std::vector<int32_t> buf(5, 0);
    TensorND dst(buf.data(), TensorLayout({5}, dtype::Int32));
    try {
        fill->exec({}, {&dst, 1});
        FAIL() << "expected DTypeError";
    } catch (const DTypeError& e) {
        EXPECT_NE(std::string(e.what()).find("Fill(value=0, dtype=float32)"), std::string::npos)
                << e.what();
        EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
    }
}
