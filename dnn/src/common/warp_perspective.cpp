// Layout rules of WarpPerspective and its two gradients. src and grad are NCHW float tensors,
// mat (N, 3, 3) float32 and mat_idx (N,) int32; the warp gives (N, C, out_h, out_w).
// WarpPerspectiveBackwardData's grad shape (src batch, C, H, W) comes from the caller, since diff
// does not determine it.
#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn {
namespace {

// Checks mat (N, 3, 3) float32 and mat_idx (N,) int32; returns N.
size_t check_mat(const OperatorBase& op, const TensorLayout& mat, const TensorLayout& mat_idx) {
    NM_OP_REQUIRE(op, ShapeError, mat.ndim == 3 && mat.shape[1] == 3 && mat.shape[2] == 3,
                  "mat must be (N, 3, 3), got ", mat.to_string());
    NM_OP_REQUIRE(op, DTypeError, mat.dtype == dtype::Float32, "mat must be float32, got ",
                  mat.to_string());
    NM_OP_REQUIRE(op, ShapeError, mat_idx.ndim == 1 && mat_idx.shape[0] == mat.shape[0],
                  "mat_idx must be (N,) with mat's N, got ", mat_idx.to_string(), " and mat ",
                  mat.to_string());
    NM_OP_REQUIRE(op, DTypeError, mat_idx.dtype == dtype::Int32, "mat_idx must be int32, got ",
                  mat_idx.to_string());
    return mat.shape[0];
}

// An empty image has no taps to read (nor to scatter onto), unless nothing is sampled.
void check_image(const OperatorBase& op, const param::WarpPerspective& p, const TensorLayout& image,
                 const char* name) {
    NM_OP_REQUIRE(op, ShapeError, image.ndim == 4, name, " must be NCHW (4-D), got ",
                  image.to_string());
    NM_OP_REQUIRE(op, DTypeError, image.dtype.is_float(), "dtype ", image.dtype.name(),
                  " is not supported (float only), ", name, " ", image.to_string());
    bool samples = p.out_h > 0 && p.out_w > 0;
    NM_OP_REQUIRE(op, ParamError, !samples || (image.shape[2] > 0 && image.shape[3] > 0),
                  "cannot sample an empty image, ", name, " ", image.to_string());
}

// diff must be (N, C, out_h, out_w) with the image's C.
void check_diff(const OperatorBase& op, const param::WarpPerspective& p, const TensorLayout& diff,
                size_t n, size_t c, DType dt) {
    NM_OP_REQUIRE(op, ShapeError,
                  diff.ndim == 4 && diff.shape[0] == n && diff.shape[1] == c &&
                          diff.shape[2] == p.out_h && diff.shape[3] == p.out_w,
                  "diff must be (N, C, out_h, out_w) = (", n, ", ", c, ", ", p.out_h, ", ", p.out_w,
                  "), got ", diff.to_string());
    NM_OP_REQUIRE(op, DTypeError, diff.dtype == dt, "diff ", diff.to_string(), " must have dtype ",
                  dt.name());
}

}  // namespace

void WarpPerspective::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    check_image(*this, m_param, src, "src");
    size_t n = check_mat(*this, inputs[1], inputs[2]);
    outputs[0] = TensorLayout({n, src.shape[1], m_param.out_h, m_param.out_w}, src.dtype);
}

void WarpPerspectiveBackwardData::deduce_layout(std::span<const TensorLayout> inputs,
                                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    size_t n = check_mat(*this, inputs[0], inputs[1]);
    const TensorLayout& diff = inputs[2];
    TensorLayout& grad = outputs[0];
    NM_REQUIRE(ShapeError, grad.ndim == 4, "grad must be NCHW (4-D), got shape ",
               grad.TensorShape::to_string());
    check_image(*this, m_param, TensorLayout(grad, diff.dtype), "grad");
    check_diff(*this, m_param, diff, n, grad.shape[1], diff.dtype);
    grad.dtype = diff.dtype;
    grad.init_contiguous_stride();
}

void WarpPerspectiveBackwardMat::deduce_layout(std::span<const TensorLayout> inputs,
                                               std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    check_image(*this, m_param, src, "src");
    size_t n = check_mat(*this, inputs[1], inputs[2]);
    check_diff(*this, m_param, inputs[3], n, src.shape[1], src.dtype);
    outputs[0] = TensorLayout({n, 3, 3}, dtype::Float32);
}

}  // namespace neomeg::dnn
