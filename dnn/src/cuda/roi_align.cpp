// ROIAlign and its gradient on the CUDA handle (kernels/roi.cu): both modes, dense or fixed
// sampling, any NCHW strides and float dtype, naive's arithmetic in double. The rois' batch
// column is checked on the device first, as naive checks it (roi_kernel.h).
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/roi_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

kern::RoiArgs align_args(const param::ROIAlign& p, const TensorLayout& image,
                         const TensorLayout& rois, const TensorLayout& pooled,
                         const TensorLayout& index) {
    kern::RoiArgs a = roi_args(image, rois, pooled, index);
    a.mode = roi_mode(p.mode);
    a.spatial_scale = p.spatial_scale;
    a.offset = p.offset;
    a.sample_h = p.sample_height;
    a.sample_w = p.sample_width;
    return a;
}

using ROIAlignImpl = RoiForward<ROIAlign, align_args, kern::roi_align_forward>;
using ROIAlignBackwardImpl = RoiBackward<ROIAlignBackward, align_args, kern::roi_align_backward>;

}  // namespace
NM_REGISTER_CUDA(ROIAlign, ROIAlignImpl);
NM_REGISTER_CUDA(ROIAlignBackward, ROIAlignBackwardImpl);
}  // namespace neomeg::dnn::cuda
