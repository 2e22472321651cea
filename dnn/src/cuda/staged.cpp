#include "src/cuda/staged.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <vector>

// Every operator: NM_FOREACH_DNN_OPERATOR registers a staged kernel of each.
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators.h"

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
    static std::array<std::atomic<bool>, kOpTypeLimit> warned{};
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

// Every operator of dnn/ops/defs, from the generated list; dnn/test/cuda/handle.cpp checks it.
#define NM_STAGED(Op) &&staged_registry().add(Op::kType, &make_staged<Op>)
[[maybe_unused]] const bool g_staged_registered = true NM_FOREACH_DNN_OPERATOR(NM_STAGED);
#undef NM_STAGED

}  // namespace
}  // namespace neomeg::dnn::cuda
