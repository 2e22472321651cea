// Layout rules of DeformablePSROIPooling and its gradient: src NCHW float, rois (K, 5) float,
// trans 4-D of src's dtype, read only unless no_trans, when it must be (at least K, 2,
// pooled_h, pooled_w) and part_size must equal pooled_h and pooled_w (MegDNN checks trans
// against the pooled size but reads it by part_size; other combinations read past the parts it
// checked). dst and count are (K, C, pooled_h, pooled_w) of src's dtype; the gradient gives
// src's and trans's layouts.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi.h"

namespace neomeg::dnn {
namespace {

TensorLayout forward_layout(const OperatorBase& op, const param::DeformablePSROIPooling& p,
                            std::span<const TensorLayout> inputs) {
    const TensorLayout &src = inputs[0], &trans = inputs[2];
    roi::check_image(op, src, "src");
    size_t k = roi::check_rois(op, inputs[1]);
    NM_OP_REQUIRE(op, ParamError, p.pooled_h > 0 && p.pooled_w > 0 && p.sample_per_part > 0,
                  "pooled_h, pooled_w and sample_per_part must be positive");
    NM_OP_REQUIRE(op, ShapeError, trans.ndim == 4, "trans must be 4-D, got ", trans.to_string());
    NM_OP_REQUIRE(op, DTypeError, trans.dtype == src.dtype, "trans ", trans.to_string(),
                  " must have src's dtype ", src.dtype.name());
    if (!p.no_trans) {
        NM_OP_REQUIRE(op, ParamError, p.part_size == p.pooled_h && p.part_size == p.pooled_w,
                      "with trans, part_size must equal pooled_h and pooled_w");
        NM_OP_REQUIRE(op, ShapeError,
                      trans.shape[0] >= k && trans.shape[1] == 2 && trans.shape[2] == p.pooled_h &&
                              trans.shape[3] == p.pooled_w,
                      "trans must be (at least K = ", k, ", 2, ", p.pooled_h, ", ", p.pooled_w,
                      "), got ", trans.to_string());
    }
    bool samples = k > 0 && src.shape[1] > 0;
    NM_OP_REQUIRE(op, ParamError, !samples || (src.shape[2] > 0 && src.shape[3] > 0),
                  "cannot sample an empty image, src ", src.to_string());
    return TensorLayout({k, src.shape[1], p.pooled_h, p.pooled_w}, src.dtype);
}

}  // namespace

void DeformablePSROIPooling::deduce_layout(std::span<const TensorLayout> inputs,
                                           std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = forward_layout(*this, m_param, inputs);
    outputs[1] = outputs[0];
}

void DeformablePSROIPoolingBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    TensorLayout dst = forward_layout(*this, m_param, inputs);
    for (size_t i : {size_t(3), size_t(4)}) {
        const char* name = i == 3 ? "diff" : "count";
        NM_REQUIRE(ShapeError, inputs[i].eq_shape(dst), name,
                   " must be (K, C, pooled_h, "
                   "pooled_w) = ",
                   dst.TensorShape::to_string(), ", got ", inputs[i].to_string());
        NM_REQUIRE(DTypeError, inputs[i].dtype == dst.dtype, name, " ", inputs[i].to_string(),
                   " must have src's dtype ", dst.dtype.name());
    }
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
    outputs[1] = TensorLayout(inputs[2], inputs[2].dtype);
}

}  // namespace neomeg::dnn
