// Layout rules of Remap and its two gradients. src and grad are NCHW float tensors, map_xy
// (N, OH, OW, 2) float32 with src's N; the remap gives (N, C, OH, OW). RemapBackwardData's grad
// shape (N, C, H, W) comes from the caller, since diff does not determine it.
#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn {
namespace {

void check_image(const OperatorBase& op, const TensorLayout& image, const char* name) {
    NM_OP_REQUIRE(op, ShapeError, image.ndim == 4, name, " must be NCHW (4-D), got ",
                  image.to_string());
    NM_OP_REQUIRE(op, DTypeError, image.dtype.is_float(), "dtype ", image.dtype.name(),
                  " is not supported (float only), ", name, " ", image.to_string());
}

// An image with no pixels has no taps, unless nothing is sampled.
void check_sampled(const OperatorBase& op, const TensorLayout& image, const TensorLayout& map_xy,
                   const char* name) {
    bool samples = map_xy.shape[1] > 0 && map_xy.shape[2] > 0;
    NM_OP_REQUIRE(op, ParamError, !samples || (image.shape[2] > 0 && image.shape[3] > 0),
                  "cannot sample an empty image, ", name, " ", image.to_string());
}

// map_xy must be (N, OH, OW, 2) float32 with the image's N.
void check_map(const OperatorBase& op, const TensorLayout& map_xy, size_t n) {
    NM_OP_REQUIRE(op, ShapeError, map_xy.ndim == 4 && map_xy.shape[3] == 2 && map_xy.shape[0] == n,
                  "map_xy must be (N, OH, OW, 2) with the image's N = ", n, ", got ",
                  map_xy.to_string());
    NM_OP_REQUIRE(op, DTypeError, map_xy.dtype == dtype::Float32, "map_xy must be float32, got ",
                  map_xy.to_string());
}

// diff must be (N, C, OH, OW) of dtype dt.
void check_diff(const OperatorBase& op, const TensorLayout& diff, const TensorLayout& map_xy,
                size_t c, DType dt) {
    NM_OP_REQUIRE(op, ShapeError,
                  diff.ndim == 4 && diff.shape[0] == map_xy.shape[0] && diff.shape[1] == c &&
                          diff.shape[2] == map_xy.shape[1] && diff.shape[3] == map_xy.shape[2],
                  "diff must be (N, C, OH, OW) = (", map_xy.shape[0], ", ", c, ", ",
                  map_xy.shape[1], ", ", map_xy.shape[2], "), got ", diff.to_string());
    NM_OP_REQUIRE(op, DTypeError, diff.dtype == dt, "diff ", diff.to_string(), " must have dtype ",
                  dt.name());
}

}  // namespace

void Remap::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &map_xy = inputs[1];
    check_image(*this, src, "src");
    check_map(*this, map_xy, src.shape[0]);
    check_sampled(*this, src, map_xy, "src");
    outputs[0] =
            TensorLayout({src.shape[0], src.shape[1], map_xy.shape[1], map_xy.shape[2]}, src.dtype);
}

void RemapBackwardData::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &map_xy = inputs[0], &diff = inputs[1];
    TensorLayout& grad = outputs[0];
    NM_REQUIRE(ShapeError, grad.ndim == 4, "grad must be NCHW (4-D), got shape ",
               grad.TensorShape::to_string());
    check_image(*this, TensorLayout(grad, diff.dtype), "grad");
    check_map(*this, map_xy, grad.shape[0]);
    check_sampled(*this, grad, map_xy, "grad");
    check_diff(*this, diff, map_xy, grad.shape[1], diff.dtype);
    grad.dtype = diff.dtype;
    grad.init_contiguous_stride();
}

void RemapBackwardMat::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &map_xy = inputs[1];
    check_image(*this, src, "src");
    check_map(*this, map_xy, src.shape[0]);
    check_sampled(*this, src, map_xy, "src");
    check_diff(*this, inputs[2], map_xy, src.shape[1], src.dtype);
    outputs[0] = TensorLayout(map_xy, dtype::Float32);
}

}  // namespace neomeg::dnn
