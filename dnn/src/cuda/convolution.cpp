// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter through cuDNN (the v9
// library's convolution API), 1-D, 2-D and 3-D, groups, dilation, both modes,
// float32/float16/bfloat16 accumulating in float32. By default a case runs the graph API's plan
// where cuDNN finalizes one (conv_graph.h: heuristics mode A's engines, "cudnn-graph:engine<N>"),
// else the legacy API's heuristic first choice ("cudnn:<algorithm>"); with
// Handle::cuda_benchmark_kernel() the fastest measured of the graph plans and the legacy
// algorithms ("cudnn-graph(measured):engine<N>", "cudnn(measured):<algorithm>", conv_plan.h);
// NEOMEG_CUDNN_LEGACY=1 keeps every case on the legacy API, and a graph plan that fails to execute
// falls back to it (with one warning per process). float32 runs without
// TF32 (CUDNN_FMA_MATH; no tensor-core engine) unless Handle::cuda_allow_tf32().
// Strided tensors are described as they are; a filter (or a filter gradient) that is not
// contiguous, broadcast or reversed axes, and integer dtypes go to the staged naive kernel.
// ConvBias is conv_bias.cpp.
#include <array>
#include <cstdio>
#include <mutex>

#include "neomeg/dnn/operators/convolution.h"
#include "src/cuda/conv_direction.h"
#include "src/cuda/conv_graph.h"
#include "src/cuda/conv_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

// One operator's direction, and which of its tensors (inputs 0 and 1, then output 0) plays the
// plan's x, w and y (conv_direction.h has the direction's cuDNN calls).
template <class Op>
struct Direction;

template <>
struct Direction<ConvolutionForward> {
    static constexpr ConvKind kKind = ConvKind::Forward;
    // inputs: src, filter; output: dst.
    static constexpr std::array<int, 3> kXwy{0, 1, 2};
};

template <>
struct Direction<ConvolutionBackwardData> {
    static constexpr ConvKind kKind = ConvKind::BackwardData;
    // inputs: filter, diff; output: grad (the src gradient).
    static constexpr std::array<int, 3> kXwy{2, 0, 1};
};

template <>
struct Direction<ConvolutionBackwardFilter> {
    static constexpr ConvKind kKind = ConvKind::BackwardFilter;
    // inputs: src, diff; output: grad (the filter gradient).
    static constexpr std::array<int, 3> kXwy{0, 2, 1};
};

void warn_graph_execute_failed(cudnnStatus_t status) {
    static std::once_flag once;
    std::call_once(once, [status] {
        std::fputs(str_cat("neomeg cuda: a cuDNN graph plan failed to execute (",
                           libcudnn().cudnnGetErrorString(status),
                           "); convolutions fall back to the legacy API where that happens\n")
                           .c_str(),
                   stderr);
    });
}

template <class Op>
class ConvImpl final : public ConvKernel<Op> {
public:
    using ConvKernel<Op>::ConvKernel;

private:
    using D = Direction<Op>;

    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        const std::array<const TensorLayout*, 3> t{&in[0], &in[1], &out[0]};
        return make_conv_plan(this->cuda_handle(), D::kKind, ConvArgs::of(this->m_param),
                              *t[D::kXwy[0]], *t[D::kXwy[1]], *t[D::kXwy[2]]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *this->plan_for(il, ol);
        const std::array<void*, 3> t{in[0].raw_ptr(), in[1].raw_ptr(), out[0].raw_ptr()};
        ConvBuffers b{t[D::kXwy[0]], t[D::kXwy[1]], t[D::kXwy[2]]};
        cudnnHandle_t h = this->cuda_handle().cudnn();
        const std::array<const void*, 4> ptrs{b.x, b.w, b.y, ws.ptr};
        if (p.graph && ws.size >= p.graph->workspace() && graph_pointers_aligned(ptrs)) {
            cudnnStatus_t s = execute_graph_plan(libcudnn(), h, *p.graph, b.x, b.w, b.y, ws.ptr);
            if (s == CUDNN_STATUS_SUCCESS)
                return graph_kernel_name(p.graph->engine(), p.graph_measured);
            // A finalized plan that still fails to launch must not fail the convolution: the
            // legacy plan is always built and the workspace covers it.
            warn_graph_execute_failed(s);
        }
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(ConvDirection<D::kKind>::run(h, p, b, ws, &alpha, &beta));
        return conv_kernel_name<D::kKind>(p.algo, p.measured);
    }
};

}  // namespace
NM_REGISTER_CUDA(ConvolutionForward, ConvImpl<ConvolutionForward>);
NM_REGISTER_CUDA(ConvolutionBackwardData, ConvImpl<ConvolutionBackwardData>);
NM_REGISTER_CUDA(ConvolutionBackwardFilter, ConvImpl<ConvolutionBackwardFilter>);
}  // namespace neomeg::dnn::cuda
