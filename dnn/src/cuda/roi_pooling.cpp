// ROIPooling and its gradient on the CUDA handle (kernels/roi.cu): both modes, any NCHW strides
// and float dtype, naive's float32 bins and double pooling. The rois' batch column is checked
// on the device first, as naive checks it (roi_kernel.h).
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/roi_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

kern::RoiArgs pooling_args(const param::ROIPooling& p, const TensorLayout& image,
                           const TensorLayout& rois, const TensorLayout& pooled,
                           const TensorLayout& index) {
    kern::RoiArgs a = roi_args(image, rois, pooled, index);
    a.mode = roi_mode(p.mode);
    a.scale = p.scale;
    return a;
}

using ROIPoolingImpl = RoiForward<ROIPooling, pooling_args, kern::roi_pooling_forward>;
using ROIPoolingBackwardImpl =
        RoiBackward<ROIPoolingBackward, pooling_args, kern::roi_pooling_backward>;

}  // namespace
NM_REGISTER_CUDA(ROIPooling, ROIPoolingImpl);
NM_REGISTER_CUDA(ROIPoolingBackward, ROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::cuda
