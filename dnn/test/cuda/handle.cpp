// The CUDA handle: which operators have a CUDA kernel (the known gap, which may only shrink), the
// staged fallback that serves the rest, and the handle's errors.
#include <set>

#include "cuda/cuda_test.h"
#include "src/cuda/handle.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Operators whose CUDA handle runs the naive kernel through host memory. Giving one a CUDA kernel
// means deleting it here (the test below fails until then); nothing may be added (but
// an operator that exists for another backend's layouts, below).
const std::set<std::string> kKnownGaps = {
        // Its CUDA kernel would call cuSOLVER, a run-time library the backend does not load yet.
        "SVD",
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
};

}  // namespace

// Needs no GPU: it reads the kernel tables.
TEST(CudaHandle, KnownGapListIsExact) {
    std::vector<std::string> gained, unlisted;
    for (size_t i = 0; i < kNumOpTypes; ++i) {
        auto type = static_cast<OpType>(i);
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
        for (size_t i = 0; i < kNumOpTypes; ++i)
            defined = defined || name == op_type_name(static_cast<OpType>(i));
        EXPECT_TRUE(defined) << name << " in kKnownGaps is no operator";
    }
}

TEST_F(Cuda, EveryDefinedOperatorIsCreated) {
    EXPECT_STREQ(handle->name(), "cuda");
    for (size_t i = 0; i < kNumOpTypes; ++i) {
        auto type = static_cast<OpType>(i);
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

param::SVD singular_values_only() {
    param::SVD p;
    p.compute_uv = false;
    return p;
}

TEST_F(Cuda, StagedFallbackMatchesNaive) {
    // SVD has no CUDA kernel (cuSOLVER would be a new run-time library): it runs naive through
    // host copies, strided inputs and padded outputs included. Singular values only, since the
    // vectors' signs are unspecified.
    CudaChecker<SVD> c(handle.get());
    c.set_param(singular_values_only()).expect_kernel("naive(staged)");
    c.execs({{2, 4, 3}});
    c.set_noncontiguous(true).execs({{2, 4, 3}});
}

TEST_F(Cuda, StagedFallbackKeepsOutputGaps) {
    // A padded output's gaps hold what was there before: the staged copy writes back the span it
    // read, which includes them unchanged.
    auto op = handle->create_operator<SVD>();
    op->param() = singular_values_only();
    HostTensor src = HostTensor::from({2, 2}, {3, 0, 0, 4});
    TensorLayout padded({2}, {2}, dtype::Float32);
    HostTensor flat = HostTensor::from({4}, {-7, -7, -7, -7});
    DeviceTensor ds = DeviceTensor::from(src), dst = DeviceTensor::from(flat);
    // S viewed with stride 2: elements 1 and 3 are gaps.
    std::vector<TensorND> in{ds.nd()}, outs{TensorND(dst.nd().raw_ptr(), padded)};
    op->exec(in, outs);
    EXPECT_EQ(last_kernel(*op), "naive(staged)");
    auto v = dst.to_host().values();
    ASSERT_EQ(v.size(), 4u);
    EXPECT_NEAR(v[0], 4, 1e-6);
    EXPECT_EQ(v[1], -7);
    EXPECT_NEAR(v[2], 3, 1e-6);
    EXPECT_EQ(v[3], -7);
}
