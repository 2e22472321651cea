// ROIAlign and its gradient on the CUDA handle (kernels/roi.cu): both modes, dense or fixed
// sampling, any NCHW strides and float dtype, naive's arithmetic in double. The rois' batch
// column is checked on the device first, as naive checks it.
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/roi_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

using Mode = param::ROIAlign::Mode;
static_assert(static_cast<uint32_t>(kern::RoiMode::MAX) == static_cast<uint32_t>(Mode::MAX));
static_assert(static_cast<uint32_t>(kern::RoiMode::AVERAGE) ==
              static_cast<uint32_t>(Mode::AVERAGE));

kern::RoiArgs align_args(const param::ROIAlign& p, const TensorLayout& image,
                         const TensorLayout& rois, const TensorLayout& pooled,
                         const TensorLayout& index) {
    kern::RoiArgs a = roi_args(image, rois, pooled, index);
    a.mode = static_cast<kern::RoiMode>(p.mode);
    a.spatial_scale = p.spatial_scale;
    a.offset = p.offset;
    a.sample_h = p.sample_height;
    a.sample_w = p.sample_width;
    return a;
}

class ROIAlignImpl final : public RoiKernel<ROIAlign> {
public:
    using RoiKernel::RoiKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &rois = in[1], &dst = out[0], &index = out[1];
        auto a = align_args(m_param, src.layout, rois.layout, dst.layout, index.layout);
        check_batch(a, rois);
        kern::roi_align_forward(a, src.raw_ptr(), rois.raw_ptr(), dst.raw_ptr(),
                                static_cast<int32_t*>(index.raw_ptr()), stream());
        return "cuda";
    }
};

class ROIAlignBackwardImpl final : public RoiKernel<ROIAlignBackward> {
public:
    using RoiKernel::RoiKernel;

private:
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return backward_workspace(out);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &diff = in[0], &rois = in[1], &index = in[2], &grad = out[0];
        auto a = align_args(m_param, grad.layout, rois.layout, diff.layout, index.layout);
        check_batch(a, rois);
        kern::roi_align_backward(a, diff.raw_ptr(), rois.raw_ptr(),
                                 static_cast<const int32_t*>(index.raw_ptr()),
                                 reinterpret_cast<double*>(ws.ptr), grad.raw_ptr(), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(ROIAlign, ROIAlignImpl);
NM_REGISTER_CUDA(ROIAlignBackward, ROIAlignBackwardImpl);
}  // namespace neomeg::dnn::cuda
