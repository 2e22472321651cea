// The CUDA handle: which operators have a CUDA kernel (the known gap, which may only shrink), the
// staged fallback that serves the rest, and the handle's errors.
#include <set>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/param_base.h"
#include "src/cuda/handle.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Operators whose CUDA handle runs the naive kernel through host memory. Giving one a CUDA kernel
// means deleting it here (the test below fails until then); nothing may be added (but
// an operator that exists for another backend's layouts, and the LSTM ops, below).
const std::set<std::string> kKnownGaps = {
        // Value-shaped ops of graphs: their kernels read the shape value on the host.
        "GetVarShape",
        "ReshapeTo",
        "BroadcastTo",
        "TakePrefix",
        // ChannelBlock's layout is oneDNN's (x86): only the graph's layout pass makes these ops,
        // and only on backends that prefer a channel block, which CUDA does not.
        "ChannelBlock",
        "ChannelUnblock",
        "ConvBiasBlocked",
        "PoolingBlocked",
        "ConvolutionBackwardDataBlocked",
        "ConvolutionBackwardFilterBlocked",
        "BatchNormForwardBlocked",
        "BatchNormBackwardBlocked",
        "BatchNormReluForwardBlocked",
        "BatchNormReluBackwardBlocked",
        "BatchNormAddReluForwardBlocked",
        "BatchNormAddReluBackwardBlocked",
        // The LSTM recurrence came without a CUDA kernel (cuDNN's RNN API would be its kernel).
        "LSTMForward",
        "LSTMBackward",
};

}  // namespace

// Needs no GPU: it reads the kernel tables.
TEST(CudaHandle, KnownGapListIsExact) {
    std::vector<std::string> gained, unlisted;
    for (OpType type : kAllOpTypes) {
        std::string name = op_type_name(type);
        bool has_kernel = OperatorRegistry::of(Backend::Cuda).find(type) != nullptr;
        bool listed = kKnownGaps.count(name) != 0;
        if (has_kernel && listed)
            gained.push_back(name);
        if (!has_kernel && !listed)
            unlisted.push_back(name);
        EXPECT_NE(cuda::staged_registry().find(type), nullptr)
                << name << " has no staged fallback (dnn/src/cuda/staged.cpp)";
    }
    EXPECT_TRUE(gained.empty()) << gained.size() << " ops gained a CUDA kernel; remove "
                                << (gained.empty() ? "" : gained[0])
                                << " (and any others) from kKnownGaps";
    EXPECT_TRUE(unlisted.empty()) << (unlisted.empty() ? "" : unlisted[0])
                                  << " has no CUDA kernel and is not a known gap";
    for (auto& name : kKnownGaps) {
        bool defined = false;
        for (OpType type : kAllOpTypes)
            defined = defined || name == op_type_name(type);
        EXPECT_TRUE(defined) << name << " in kKnownGaps is no operator";
    }
}

TEST_F(Cuda, EveryDefinedOperatorIsCreated) {
    EXPECT_STREQ(handle->name(), "cuda");
    for (OpType type : kAllOpTypes) {
        ASSERT_TRUE(handle->has_operator(type)) << op_type_name(type);
        auto op = handle->create_operator(type);
        EXPECT_EQ(op->type(), type);
        EXPECT_EQ(op->handle(), handle.get());
    }
}

TEST_F(Cuda, MissingDeviceIsAClearError) {
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    EXPECT_THROW(Handle::make_cuda(count, nullptr), NotSupportedError);
    EXPECT_THROW(Handle::make_cuda(-1, nullptr), NotSupportedError);
}

param::ChannelBlock block_of(uint32_t block) {
    param::ChannelBlock p;
    p.block = block;
    return p;
}

TEST_F(Cuda, StagedFallbackMatchesNaive) {
    // ChannelBlock has no CUDA kernel (its layout is oneDNN's): it runs naive through host copies,
    // strided inputs and padded outputs included.
    CudaChecker<ChannelBlock> c(handle.get());
    c.set_param(block_of(4)).expect_kernel("naive(staged)");
    c.execs({{2, 6, 3, 2}});
    c.set_noncontiguous(true).execs({{2, 6, 3, 2}});
}

TEST_F(Cuda, StagedFallbackKeepsOutputGaps) {
    // A padded output's gaps hold what was there before: the staged copy writes back the span it
    // read, which includes them unchanged.
    auto op = handle->create_operator<ChannelBlock>();
    op->param() = block_of(2);
    HostTensor src = HostTensor::from({1, 2, 1, 1}, {3, 4});
    // The (1, 1, 1, 1, 2) output viewed with stride 2 on its block axis: elements 1 and 3 are gaps.
    TensorLayout padded({1, 1, 1, 1, 2}, {4, 4, 4, 4, 2}, dtype::Float32);
    HostTensor flat = HostTensor::from({4}, {-7, -7, -7, -7});
    DeviceTensor ds = DeviceTensor::from(src), dst = DeviceTensor::from(flat);
    std::vector<TensorND> in{ds.nd()}, outs{TensorND(dst.nd().raw_ptr(), padded)};
    op->exec(in, outs);
    EXPECT_EQ(last_kernel(*op), "naive(staged)");
    EXPECT_EQ(dst.to_host().values(), (std::vector<double>{3, -7, 4, -7}));
}

TEST_F(Cuda, DebugSwitchPrintsEveryOp) {
    const char* env = std::getenv("NEOMEG_DEBUG");
    if (!env || std::string(env) != "1")
        GTEST_SKIP() << "runs under NEOMEG_DEBUG=1 (ctest dnn.cuda.debug)";
    param::Elemwise add;
    add.mode = param::Elemwise::Mode::ADD;
    testing::internal::CaptureStderr();
    CudaChecker<Elemwise>(handle.get()).set_param(add).execs({{3, 5}, {3, 5}});
    CudaChecker<ChannelBlock>(handle.get()).set_param(block_of(4)).execs({{2, 6, 3, 2}});
    std::string err = testing::internal::GetCapturedStderr();
    // One line per CUDA op run (the checker's naive reference runs on a handle of its own), with
    // the params, the layouts and what ran.
    EXPECT_NE(err.find("neomeg cuda: Elemwise" + param::to_string(add) +
                       " inputs [{3(5),5(1)} float32"),
              std::string::npos)
            << err;
    EXPECT_NE(err.find("] kernel cuda"), std::string::npos) << err;  // "cuda", "cuda(vector)"
    EXPECT_NE(err.find("neomeg cuda: ChannelBlock("), std::string::npos) << err;
    EXPECT_NE(err.find("kernel naive(staged)"), std::string::npos) << err;
}
