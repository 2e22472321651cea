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
        "IndexingMultiAxisVec",
        "IndexingSetMultiAxisVec",
        "IndexingIncrMultiAxisVec",
        "Scatter",
        "CondTake",
        "NonZero",
        "MatrixInverse",
        "SVD",
        "GroupNormForward",
        "GroupNormBackward",
        "Resize",
        "ResizeBackward",
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

TEST_F(Cuda, StagedFallbackMatchesNaive) {
    // Resize has no CUDA kernel yet: it runs naive through host copies, strided inputs and
    // padded outputs included.
    param::Resize p;
    p.out_h = 7;
    p.out_w = 9;
    CudaChecker<Resize> c(handle.get());
    c.set_param(p).expect_kernel("naive(staged)");
    c.execs({{2, 3, 4, 5}});
    c.set_noncontiguous(true).execs({{2, 3, 4, 5}});
}

TEST_F(Cuda, StagedFallbackKeepsOutputGaps) {
    // A padded output's gaps hold what was there before: the staged copy writes back the span it
    // read, which includes them unchanged. Scatter has no CUDA kernel yet.
    auto op = handle->create_operator<Scatter>();
    HostTensor data = HostTensor::from({2, 2}, {1, 2, 3, 4});
    HostTensor index = HostTensor::from({1, 2}, {1, 0}, dtype::Int32);
    HostTensor src = HostTensor::from({1, 2}, {10, 20});
    TensorLayout padded({2, 2}, {3, 1}, dtype::Float32);
    HostTensor flat = HostTensor::from({6}, {-7, -7, -7, -7, -7, -7});
    DeviceTensor dd = DeviceTensor::from(data), di = DeviceTensor::from(index),
                 ds = DeviceTensor::from(src), dst = DeviceTensor::from(flat);
    // dst viewed as (2, 2) rows of stride 3: elements 2 and 5 are gaps.
    std::vector<TensorND> in{dd.nd(), di.nd(), ds.nd()}, outs{TensorND(dst.nd().raw_ptr(), padded)};
    op->exec(in, outs);
    EXPECT_EQ(last_kernel(*op), "naive(staged)");
    // Axis 0: dst[1][0] = 10, dst[0][1] = 20.
    EXPECT_EQ(dst.to_host().values(), (std::vector<double>{1, 20, -7, 10, 4, -7}));
}
