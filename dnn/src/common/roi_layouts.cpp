// Layout rules of ROIAlign, ROIPooling and their backwards, which share them (roi.h): src
// (N, C, H, W) float and rois (K, 5) float give dst (K, C, pooled_height, pooled_width) of src's
// dtype and an int32 index of that shape; a backward's grad shape comes from the caller.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi.h"

namespace neomeg::dnn {

void ROIAlign::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    roi::deduce_pooled(*this, m_param, inputs, outputs);
}

void ROIAlignBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    roi::deduce_image_grad(*this, m_param, inputs, outputs);
}

void ROIPooling::deduce_layout(std::span<const TensorLayout> inputs,
                               std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    roi::deduce_pooled(*this, m_param, inputs, outputs);
}

void ROIPoolingBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                       std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    roi::deduce_image_grad(*this, m_param, inputs, outputs);
}

}  // namespace neomeg::dnn
