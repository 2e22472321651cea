// Remap and its gradients on the CUDA handle (kernels/remap.cu): both interpolations and every
// border mode over any NCHW strides and float dtype, naive's arithmetic in double.
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/strided_kernel.h"
#include "src/cuda/warp_border.h"

namespace neomeg::dnn::cuda {
namespace {

// `image` is the (N, C, H, W) side, `mapped` the (N, C, OH, OW) one.
kern::RemapArgs remap_args(const param::Remap& p, const TensorLayout& image,
                           const TensorLayout& map_xy, const TensorLayout& mapped) {
    kern::RemapArgs a{};
    a.bmode = warp_border(p.border_type);
    a.nearest = p.imode == param::Remap::InterpolationMode::NEAREST;
    a.scalar = p.scalar;
    a.n = static_cast<int64_t>(image[0]);
    a.c = static_cast<int64_t>(image[1]);
    a.in_h = static_cast<int64_t>(image[2]);
    a.in_w = static_cast<int64_t>(image[3]);
    a.out_h = static_cast<int64_t>(map_xy[1]);
    a.out_w = static_cast<int64_t>(map_xy[2]);
    a.dt = to_kern(image.dtype);
    for (size_t d = 0; d < 4; ++d) {
        a.image_strides[d] = image.stride[d];
        a.mapped_strides[d] = mapped.stride[d];
        a.map_strides[d] = map_xy.stride[d];
    }
    return a;
}

class RemapImpl final : public StridedKernel<Remap> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &map_xy = in[1];
        kern::remap_forward(remap_args(m_param, src.layout, map_xy.layout, out[0].layout),
                            src.raw_ptr(), static_cast<const float*>(map_xy.raw_ptr()),
                            out[0].raw_ptr(), stream());
        return "cuda";
    }
};

class RemapBackwardDataImpl final : public StridedKernel<RemapBackwardData, true> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &map_xy = in[0], &diff = in[1], &grad = out[0];
        kern::remap_backward_data(remap_args(m_param, grad.layout, map_xy.layout, diff.layout),
                                  static_cast<const float*>(map_xy.raw_ptr()), diff.raw_ptr(),
                                  reinterpret_cast<double*>(ws.ptr), grad.raw_ptr(), stream());
        return "cuda";
    }
};

class RemapBackwardMatImpl final : public StridedKernel<RemapBackwardMat> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &map_xy = in[1], &diff = in[2], &grad = out[0];
        auto a = remap_args(m_param, src.layout, map_xy.layout, diff.layout);
        for (size_t d = 0; d < 4; ++d)
            a.map_grad_strides[d] = grad.layout.stride[d];
        kern::remap_backward_mat(a, src.raw_ptr(), static_cast<const float*>(map_xy.raw_ptr()),
                                 diff.raw_ptr(), static_cast<float*>(grad.raw_ptr()), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Remap, RemapImpl);
NM_REGISTER_CUDA(RemapBackwardData, RemapBackwardDataImpl);
NM_REGISTER_CUDA(RemapBackwardMat, RemapBackwardMatImpl);
}  // namespace neomeg::dnn::cuda
