// PoolingForward and PoolingBackward through cuDNN: MAX, AVERAGE (padding counted) and
// AVERAGE_COUNT_EXCLUDE_PADDING, 1-D (as 2-D over (1, W)), 2-D and 3-D, float32/float16/bfloat16;
// the forward takes any positive strides, the backward dense tensors. MAX backward sends each
// window's gradient to its maximum as naive does (ties, where naive picks the first, only arise
// from equal inputs); as naive, it finds the maximum from src alone: cuDNN locates it by comparing
// src with dst, so the kernel first pools src into its workspace rather than trust the dst it is
// given, which the operator only shape-checks.
#include <array>

#include "neomeg/dnn/operators/pooling.h"
#include "src/cuda/cudnn_util.h"
#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {
namespace {

class PoolingDesc {
public:
    PoolingDesc() { NM_CUDNN_CHECK(libcudnn().cudnnCreatePoolingDescriptor(&m_desc)); }
    ~PoolingDesc() { libcudnn().cudnnDestroyPoolingDescriptor(m_desc); }
    PoolingDesc(const PoolingDesc&) = delete;
    PoolingDesc& operator=(const PoolingDesc&) = delete;

    bool set(const param::Pooling& p) {
        cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
        switch (p.mode) {
            case param::Pooling::Mode::MAX:
                // A NaN in the window is its maximum in naive too.
                mode = CUDNN_POOLING_MAX;
                break;
            case param::Pooling::Mode::AVERAGE:
                mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
                break;
            case param::Pooling::Mode::AVERAGE_COUNT_EXCLUDE_PADDING:
                mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
                break;
        }
        std::vector<int> window(p.window.begin(), p.window.end()),
                padding(p.padding.begin(), p.padding.end()),
                stride(p.stride.begin(), p.stride.end());
        if (window.size() == 1) {
            window.insert(window.begin(), 1);
            padding.insert(padding.begin(), 0);
            stride.insert(stride.begin(), 1);
        }
        return libcudnn().cudnnSetPoolingNdDescriptor(
                       m_desc, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(window.size()),
                       window.data(), padding.data(), stride.data()) == CUDNN_STATUS_SUCCESS;
    }
    cudnnPoolingDescriptor_t get() const { return m_desc; }

private:
    cudnnPoolingDescriptor_t m_desc = nullptr;
};

bool same_float_dtype(std::span<const TensorLayout> ls) {
    for (auto& l : ls)
        if (!cudnn_type(l.dtype) || l.dtype != ls[0].dtype || l.is_empty())
            return false;
    return true;
}

class PoolingForwardImpl final : public CudaKernel<PoolingForward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        std::array<TensorLayout, 2> all{in[0], out[0]};
        TensorDesc x, y;
        return same_float_dtype(all) && x.set(in[0]) && y.set(out[0]) && m_pool.set(m_param);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        TensorDesc x, y;
        x.set(in[0].layout);
        y.set(out[0].layout);
        m_pool.set(m_param);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnPoolingForward(cuda_handle().cudnn(), m_pool.get(), &alpha,
                                                      x.get(), in[0].raw_ptr(), &beta, y.get(),
                                                      out[0].raw_ptr()));
        return "cudnn";
    }
    PoolingDesc m_pool;
};

class PoolingBackwardImpl final : public CudaKernel<PoolingBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    // inputs: src, dst, diff; output: grad.
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        std::array<TensorLayout, 4> all{in[0], in[1], in[2], out[0]};
        // cuDNN's backward wants dst and diff (and src and grad) described alike; dense tensors
        // are, and the rest go to the staged kernel.
        for (auto& l : all)
            if (!l.is_contiguous())
                return false;
        TensorDesc a, b, c, d;
        return same_float_dtype(all) && a.set(in[0]) && b.set(in[1]) && c.set(in[2]) &&
               d.set(out[0]) && m_pool.set(m_param);
    }
    bool is_max() const { return m_param.mode == param::Pooling::Mode::MAX; }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return is_max() ? in[1].access_bytes() : 0;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        TensorDesc x, y, dy, dx;
        x.set(in[0].layout);
        y.set(in[1].layout);
        dy.set(in[2].layout);
        dx.set(out[0].layout);
        m_pool.set(m_param);
        float alpha = 1, beta = 0;
        const void* y_ptr = in[1].raw_ptr();
        if (is_max()) {
            // The true forward output, dense, in the workspace.
            TensorLayout dense(in[1].layout, in[1].layout.dtype);
            y.set(dense);
            NM_CUDNN_CHECK(libcudnn().cudnnPoolingForward(cuda_handle().cudnn(), m_pool.get(),
                                                          &alpha, x.get(), in[0].raw_ptr(), &beta,
                                                          y.get(), ws.ptr));
            y_ptr = ws.ptr;
        }
        NM_CUDNN_CHECK(libcudnn().cudnnPoolingBackward(
                cuda_handle().cudnn(), m_pool.get(), &alpha, y.get(), y_ptr, dy.get(),
                in[2].raw_ptr(), x.get(), in[0].raw_ptr(), &beta, dx.get(), out[0].raw_ptr()));
        return "cudnn";
    }
    PoolingDesc m_pool;
};

}  // namespace
NM_REGISTER_CUDA(PoolingForward, PoolingForwardImpl);
NM_REGISTER_CUDA(PoolingBackward, PoolingBackwardImpl);
}  // namespace neomeg::dnn::cuda
