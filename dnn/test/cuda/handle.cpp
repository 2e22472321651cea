// The CUDA handle: which operators have a CUDA kernel (the known gap, which may only shrink), the
// staged fallback that serves the rest, and the handle's errors.
#include <set>

#include "cuda/cuda_test.h"
#include "src/cuda/handle.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Operators whose CUDA handle runs the naive kernel through host memory. Giving one a CUDA kernel
// means deleting it here (the test below fails until then); nothing may be added.
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
        "PermutationRNG",
        "Diag",
        "Resize",
        "ResizeBackward",
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
                << name << " has no staged fallback (add it to dnn/src/cuda/staged.cpp)";
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
    // Diag has no CUDA kernel yet: it runs naive through host copies, strided inputs and
    // padded outputs included.
    CudaChecker<Diag> c(handle.get());
    c.set_epsilon(0).expect_kernel("naive(staged)").execs({{5}});
    c.execs({{4, 6}});
    c.set_noncontiguous(true).execs({{4, 9}});
}

TEST_F(Cuda, StagedFallbackKeepsOutputGaps) {
    // A padded output's gaps hold what was there before: the staged copy writes back the span it
    // read, which includes them unchanged. Diag has no CUDA kernel yet.
    auto op = handle->create_operator<Diag>();
    HostTensor src = HostTensor::from({2, 3}, {3, 1, 2, 0, 5, 4});
    TensorLayout padded({2}, {2}, dtype::Float32);
    HostTensor flat = HostTensor::from({4}, {-7, -7, -7, -7});
    DeviceTensor dsrc = DeviceTensor::from(src);
    DeviceTensor dst = DeviceTensor::from(flat);
    // The diagonal (3, 5) into every second element of dst: elements 1 and 3 are gaps.
    std::vector<TensorND> in{dsrc.nd()}, outs{TensorND(dst.nd().raw_ptr(), padded)};
    op->exec(in, outs);
    EXPECT_EQ(last_kernel(*op), "naive(staged)");
    EXPECT_EQ(dst.to_host().values(), (std::vector<double>{3, -7, 5, -7}));
}
