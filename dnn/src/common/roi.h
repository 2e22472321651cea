// What ROIAlign and ROIPooling share: the layout checks of rois (K, 5) and of the pooled side
// (K, C, pooled_height, pooled_width), and the rule that turns a roi's first column into an
// image of the batch, which naive and CUDA apply and report alike.
#pragma once

#include <cstdint>
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
