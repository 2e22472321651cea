// What ROIAlign and ROIPooling share: the layout checks of rois (K, 5) and of the pooled side
// (K, C, pooled_height, pooled_width), and the rule that turns a roi's first column into an
// image of the batch, which naive and CUDA apply and report alike.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::roi {

// rois must be (K, 5) float; returns K.
inline size_t check_rois(const OperatorBase& op, const TensorLayout& rois) {
    NM_OP_REQUIRE(op, ShapeError, rois.ndim == 2 && rois.shape[1] == 5,
                  "rois must be (K, 5) rows (batch index, x1, y1, x2, y2), got ", rois.to_string());
    NM_OP_REQUIRE(op, DTypeError, rois.dtype.is_float(), "rois must be a float tensor, got ",
                  rois.to_string());
    return rois.shape[0];
}

// An NCHW float image (src, or the grad the caller shapes).
inline void check_image(const OperatorBase& op, const TensorLayout& image, const char* name) {
    NM_OP_REQUIRE(op, ShapeError, image.ndim == 4, name, " must be NCHW (4-D), got ",
                  image.to_string());
    NM_OP_REQUIRE(op, DTypeError, image.dtype.is_float(), "dtype ", image.dtype.name(),
                  " is not supported (float only), ", name, " ", image.to_string());
}

// `pooled` (diff or index) must be (K, C, ph, pw) of dtype `dt`.
inline void check_pooled(const OperatorBase& op, const TensorLayout& pooled, const char* name,
                         size_t k, size_t c, size_t ph, size_t pw, DType dt) {
    NM_OP_REQUIRE(op, ShapeError,
                  pooled.ndim == 4 && pooled.shape[0] == k && pooled.shape[1] == c &&
                          pooled.shape[2] == ph && pooled.shape[3] == pw,
                  name, " must be (K, C, pooled_height, pooled_width) = (", k, ", ", c, ", ", ph,
                  ", ", pw, "), got ", pooled.to_string());
    NM_OP_REQUIRE(op, DTypeError, pooled.dtype == dt, name, " ", pooled.to_string(),
                  " must have dtype ", dt.name());
}

// The forward's outputs from src (N, C, H, W) and rois (K, 5): dst (K, C, ph, pw) of src's dtype
// and an int32 index of that shape. `p` holds pooled_height and pooled_width.
template <class Param>
void deduce_pooled(const OperatorBase& op, const Param& p, std::span<const TensorLayout> inputs,
                   std::span<TensorLayout> outputs) {
    const TensorLayout& src = inputs[0];
    check_image(op, src, "src");
    const size_t k = check_rois(op, inputs[1]);
    const TensorShape shape{k, src.shape[1], p.pooled_height, p.pooled_width};
    outputs[0] = TensorLayout(shape, src.dtype);
    outputs[1] = TensorLayout(shape, dtype::Int32);
}

// The backward's grad from diff, rois and index: grad's shape (N, C, H, W) comes from the caller,
// since diff does not determine it; its dtype is diff's.
template <class Param>
void deduce_image_grad(const OperatorBase& op, const Param& p, std::span<const TensorLayout> inputs,
                       std::span<TensorLayout> outputs) {
    const TensorLayout &diff = inputs[0], &index = inputs[2];
    const size_t k = check_rois(op, inputs[1]);
    TensorLayout& grad = outputs[0];
    NM_OP_REQUIRE(op, ShapeError, grad.ndim == 4, "grad must be NCHW (4-D), got shape ",
                  grad.TensorShape::to_string());
    check_image(op, TensorLayout(grad, diff.dtype), "grad");
    const size_t c = grad.shape[1], ph = p.pooled_height, pw = p.pooled_width;
    check_pooled(op, diff, "diff", k, c, ph, pw, diff.dtype);
    check_pooled(op, index, "index", k, c, ph, pw, dtype::Int32);
    grad.dtype = diff.dtype;
    grad.init_contiguous_stride();
}

// The image a roi's batch column v names: v truncated toward zero (MegDNN's int conversion),
// valid when it lies in [0, batch); -1 otherwise (NaN included).
inline int64_t batch_index(double v, size_t batch) {
    return v > -1.0 && v < static_cast<double>(batch) ? static_cast<int64_t>(v) : -1;
}

inline std::string bad_batch_message(const std::string& who, size_t k, double v, size_t batch) {
    return str_cat(who, ": rois[", k, ", 0] = ", v, " is not an image of the batch [0, ", batch,
                   ")");
}

}  // namespace neomeg::dnn::roi
