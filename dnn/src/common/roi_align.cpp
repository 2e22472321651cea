// Layout rules of ROIAlign and ROIAlignBackward: src (N, C, H, W) float and rois (K, 5) float give
// dst (K, C, pooled_height, pooled_width) of src's dtype and an int32 index of that shape.
// ROIAlignBackward's grad shape (N, C, H, W) comes from the caller, since diff does not determine
// it.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi.h"

namespace neomeg::dnn {

void ROIAlign::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    roi::check_image(*this, src, "src");
    size_t k = roi::check_rois(*this, inputs[1]);
    TensorShape shape{k, src.shape[1], m_param.pooled_height, m_param.pooled_width};
    outputs[0] = TensorLayout(shape, src.dtype);
    outputs[1] = TensorLayout(shape, dtype::Int32);
}

void ROIAlignBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &diff = inputs[0], &index = inputs[2];
    size_t k = roi::check_rois(*this, inputs[1]);
    TensorLayout& grad = outputs[0];
    NM_REQUIRE(ShapeError, grad.ndim == 4, "grad must be NCHW (4-D), got shape ",
               grad.TensorShape::to_string());
    roi::check_image(*this, TensorLayout(grad, diff.dtype), "grad");
    size_t c = grad.shape[1], ph = m_param.pooled_height, pw = m_param.pooled_width;
    roi::check_pooled(*this, diff, "diff", k, c, ph, pw, diff.dtype);
    roi::check_pooled(*this, index, "index", k, c, ph, pw, dtype::Int32);
    grad.dtype = diff.dtype;
    grad.init_contiguous_stride();
}

}  // namespace neomeg::dnn
