// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter through cuDNN (the v9
// library's convolution API), 1-D, 2-D and 3-D, groups, dilation, both modes,
// float32/float16/bfloat16 accumulating in float32; the algorithm is cuDNN's heuristic first
// choice that supports the case, or the fastest measured with Handle::cuda_benchmark_kernel()
// (conv_plan.h). float32 runs without TF32 (CUDNN_FMA_MATH) unless Handle::cuda_allow_tf32().
// Strided tensors are described as they are; a filter (or a filter gradient) that is not
// contiguous, broadcast or reversed axes, and integer dtypes go to the staged naive kernel.
// ConvBias is conv_bias.cpp.
#include <array>

#include "src/cuda/conv_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

class ConvForwardImpl final : public ConvKernel<ConvolutionForward> {
public:
    using ConvKernel::ConvKernel;

private:
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle(), ConvKind::Forward, ConvArgs::of(m_param), in[0], in[1],
                              out[0]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionForward(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.w.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.y.get(), out[0].raw_ptr()));
        return p.measured ? "cudnn(measured)" : "cudnn";
    }
};

class ConvBackwardDataImpl final : public ConvKernel<ConvolutionBackwardData> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: filter, diff; output: grad (the src gradient).
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle(), ConvKind::BackwardData, ConvArgs::of(m_param), out[0],
                              in[0], in[1]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionBackwardData(
                cuda_handle().cudnn(), &alpha, p.w.get(), in[0].raw_ptr(), p.y.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.x.get(), out[0].raw_ptr()));
        return p.measured ? "cudnn(measured)" : "cudnn";
    }
};

class ConvBackwardFilterImpl final : public ConvKernel<ConvolutionBackwardFilter> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: src, diff; output: grad (the filter gradient).
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle(), ConvKind::BackwardFilter, ConvArgs::of(m_param), in[0],
                              out[0], in[1]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionBackwardFilter(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.y.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo),
                ws.ptr, ws.size, &beta, p.w.get(), out[0].raw_ptr()));
        return p.measured ? "cudnn(measured)" : "cudnn";
    }
};

}  // namespace
NM_REGISTER_CUDA(ConvolutionForward, ConvForwardImpl);
NM_REGISTER_CUDA(ConvolutionBackwardData, ConvBackwardDataImpl);
NM_REGISTER_CUDA(ConvolutionBackwardFilter, ConvBackwardFilterImpl);
}  // namespace neomeg::dnn::cuda
