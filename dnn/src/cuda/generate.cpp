// Arange, Linspace and Eye on the CUDA handle (kernels/generate.cu).
#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

class ArangeImpl final : public CudaKernel<Arange> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& l = out[0].layout;
        kern::linear_fill(out[0].raw_ptr(), to_kern(l.dtype), l.stride[0],
                          static_cast<int64_t>(l[0]), m_param.start, m_param.step, false, 0,
                          stream());
        return "cuda";
    }
};

class LinspaceImpl final : public CudaKernel<Linspace> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& l = out[0].layout;
        size_t n = l[0];
        double start = m_param.start, stop = m_param.stop;
        size_t div = m_param.endpoint ? n - 1 : n;
        double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0;
        kern::linear_fill(out[0].raw_ptr(), to_kern(l.dtype), l.stride[0], static_cast<int64_t>(n),
                          start, step, m_param.endpoint && n > 1, stop, stream());
        return "cuda";
    }
};

class EyeImpl final : public CudaKernel<Eye> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& l = out[0].layout;
        kern::Strided s;
        s.ndim = 2;
        for (size_t d = 0; d < 2; ++d) {
            s.shape[d] = static_cast<int64_t>(l[d]);
            s.stride[d] = l.stride[d];
        }
        kern::eye(out[0].raw_ptr(), to_kern(l.dtype), s, m_param.k, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Arange, ArangeImpl);
NM_REGISTER_CUDA(Linspace, LinspaceImpl);
NM_REGISTER_CUDA(Eye, EyeImpl);
}  // namespace neomeg::dnn::cuda
