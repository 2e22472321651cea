#include "src/cuda/staged.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <vector>

namespace neomeg::dnn::cuda {
namespace {

// The bytes a layout reaches from its base pointer, as [first, last) byte offsets.
struct Span {
    ptrdiff_t begin, end;
};
Span byte_span(const TensorLayout& l) {
    auto [lo, hi] = l.span_elems();
    auto size = static_cast<ptrdiff_t>(l.dtype.size());
    return {lo * size, hi * size};
}

// A host copy of one device tensor's span, and the TensorND that views it like the device one.
struct HostCopy {
    std::vector<std::byte> bytes;
    TensorND nd;
};

HostCopy download(const TensorND& t, cudaStream_t stream) {
    HostCopy c;
    Span s = byte_span(t.layout);
    c.bytes.resize(static_cast<size_t>(s.end - s.begin));
    if (!c.bytes.empty())
        NM_CUDA_CHECK(cudaMemcpyAsync(c.bytes.data(),
                                      static_cast<std::byte*>(t.raw_ptr()) + s.begin,
                                      c.bytes.size(), cudaMemcpyDeviceToHost, stream));
    c.nd = TensorND(c.bytes.data() - s.begin, t.layout);
    return c;
}

void warn_once(const OperatorBase& op) {
    static std::array<std::atomic<bool>, kNumOpTypes> warned{};
    if (!warned[static_cast<size_t>(op.type())].exchange(true))
        std::fprintf(stderr,
                     "neomeg: %s has no CUDA kernel for this case; it runs the naive kernel "
                     "through host memory (slow)\n",
                     op.param_str().c_str());
}

}  // namespace

void run_staged(HandleImpl& handle, OperatorBase& naive_op, std::span<const TensorND> inputs,
                std::span<const TensorND> outputs) {
    warn_once(naive_op);
    DeviceGuard guard(handle.device());
    cudaStream_t stream = handle.stream();
    std::vector<HostCopy> in, out;
    std::vector<TensorND> in_nds, out_nds;
    std::vector<TensorLayout> in_layouts, out_layouts;
    for (auto& t : inputs) {
        in.push_back(download(t, stream));
        in_layouts.push_back(t.layout);
    }
    // Outputs too: a strided output's gaps, and the elements an operator leaves alone (the
    // unselected ones of an in-place scatter), must come back unchanged.
    for (auto& t : outputs) {
        out.push_back(download(t, stream));
        out_layouts.push_back(t.layout);
    }
    for (auto& c : in)
        in_nds.push_back(c.nd);
    for (auto& c : out)
        out_nds.push_back(c.nd);
    NM_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::byte> ws(naive_op.get_workspace_in_bytes(in_layouts, out_layouts));
    naive_op.exec_unchecked(in_nds, out_nds, {ws.data(), ws.size()});
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (out[i].bytes.empty())
            continue;
        Span s = byte_span(outputs[i].layout);
        NM_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(outputs[i].raw_ptr()) + s.begin,
                                      out[i].bytes.data(), out[i].bytes.size(),
                                      cudaMemcpyHostToDevice, stream));
    }
    // The host buffers die on return, so the copies must have finished.
    NM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

OperatorRegistry& staged_registry() {
    static OperatorRegistry registry;
    return registry;
}

namespace {

template <class Op>
std::unique_ptr<OperatorBase> make_staged(Handle* h) {
    return std::make_unique<Staged<Op>>(h);
}

// Every operator of dnn/ops/defs; dnn/test/cuda/handle.cpp fails when one is missing here.
#define NM_STAGED(Op) staged_registry().add(Op::kType, &make_staged<Op>)
[[maybe_unused]] const bool g_staged_registered =
        NM_STAGED(ConvolutionForward) && NM_STAGED(ConvolutionBackwardData) &&
        NM_STAGED(ConvolutionBackwardFilter) && NM_STAGED(ConvBias) && NM_STAGED(Elemwise) &&
        NM_STAGED(IndexingOneHot) && NM_STAGED(IndexingSetOneHot) &&
        NM_STAGED(IndexingMultiAxisVec) && NM_STAGED(IndexingSetMultiAxisVec) &&
        NM_STAGED(IndexingIncrMultiAxisVec) && NM_STAGED(Gather) && NM_STAGED(Scatter) &&
        NM_STAGED(CondTake) && NM_STAGED(NonZero) && NM_STAGED(MatrixMul) &&
        NM_STAGED(BatchedMatrixMul) && NM_STAGED(Dot) && NM_STAGED(MatrixInverse) &&
        NM_STAGED(SVD) && NM_STAGED(BatchNormForward) && NM_STAGED(BatchNormBackward) &&
        NM_STAGED(LayerNormForward) && NM_STAGED(LayerNormBackward) &&
        NM_STAGED(GroupNormForward) && NM_STAGED(GroupNormBackward) && NM_STAGED(SoftmaxForward) &&
        NM_STAGED(SoftmaxBackward) && NM_STAGED(LogSoftmaxForward) &&
        NM_STAGED(LogSoftmaxBackward) && NM_STAGED(DropoutForward) && NM_STAGED(DropoutBackward) &&
        NM_STAGED(PoolingForward) && NM_STAGED(PoolingBackward) &&
        NM_STAGED(AdaptivePoolingForward) && NM_STAGED(AdaptivePoolingBackward) &&
        NM_STAGED(UniformRNG) && NM_STAGED(GaussianRNG) && NM_STAGED(PermutationRNG) &&
        NM_STAGED(CheckNonFinite) && NM_STAGED(Reduce) && NM_STAGED(Argmax) && NM_STAGED(Argmin) &&
        NM_STAGED(Cumsum) && NM_STAGED(Argsort) && NM_STAGED(TopK) && NM_STAGED(Fill) &&
        NM_STAGED(TypeCvt) && NM_STAGED(Relayout) && NM_STAGED(Linspace) && NM_STAGED(Arange) &&
        NM_STAGED(Eye) && NM_STAGED(Diag) && NM_STAGED(Concat) && NM_STAGED(Split) &&
        NM_STAGED(Padding) && NM_STAGED(PaddingBackward) && NM_STAGED(Resize) &&
        NM_STAGED(ResizeBackward);
#undef NM_STAGED

}  // namespace
}  // namespace neomeg::dnn::cuda
