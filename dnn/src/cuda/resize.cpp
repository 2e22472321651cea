// Resize and ResizeBackward on the CUDA handle (kernels/resize.cu): NEAREST, LINEAR (half-pixel or
// align_corners) and CUBIC over any NCHW strides, float dtypes, with naive's taps (the one rule of
// common/resize_taps.h).
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// `image` is the (N, C, in_h, in_w) side, `resized` the (N, C, out_h, out_w) one.
kern::ResizeArgs resize_args(const param::Resize& p, const TensorLayout& image,
                             const TensorLayout& resized) {
    kern::ResizeArgs a{};
    a.mode = static_cast<resize::Mode>(p.mode);  // numbered alike (common/resize.cpp)
    a.align_corners = p.align_corners;
    a.n = static_cast<int64_t>(image[0]);
    a.c = static_cast<int64_t>(image[1]);
    a.in_h = static_cast<int64_t>(image[2]);
    a.in_w = static_cast<int64_t>(image[3]);
    a.out_h = static_cast<int64_t>(resized[2]);
    a.out_w = static_cast<int64_t>(resized[3]);
    a.dt = to_kern(image.dtype);
    for (size_t d = 0; d < 4; ++d) {
        a.src_strides[d] = image.stride[d];
        a.dst_strides[d] = resized.stride[d];
    }
    return a;
}

class ResizeImpl final : public CudaKernel<Resize> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        kern::resize_forward(resize_args(m_param, in[0].layout, out[0].layout), in[0].raw_ptr(),
                             out[0].raw_ptr(), stream());
        return "cuda";
    }
};

class ResizeBackwardImpl final : public CudaKernel<ResizeBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // The double accumulator, one per grad element.
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return out[0].total_nr_elems() * sizeof(double);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        kern::resize_backward(resize_args(m_param, out[0].layout, in[0].layout), in[0].raw_ptr(),
                              reinterpret_cast<double*>(ws.ptr), out[0].raw_ptr(), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Resize, ResizeImpl);
NM_REGISTER_CUDA(ResizeBackward, ResizeBackwardImpl);
}  // namespace neomeg::dnn::cuda
