// Layout rules of Resize and ResizeBackward on NCHW float tensors. Resize gives
// (N, C, out_h, out_w). ResizeBackward's grad shape (N, C, in_h, in_w) comes from the caller,
// since diff does not determine it; diff's spatial size must equal the params' (out_h, out_w).
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/resize_taps.h"

namespace neomeg::dnn {
namespace {

// resize::Mode (common/resize_taps.h, shared with device code) numbers the modes as the param.
static_assert(static_cast<uint32_t>(resize::Mode::NEAREST) ==
              static_cast<uint32_t>(param::Resize::InterpolationMode::NEAREST));
static_assert(static_cast<uint32_t>(resize::Mode::LINEAR) ==
              static_cast<uint32_t>(param::Resize::InterpolationMode::LINEAR));
static_assert(static_cast<uint32_t>(resize::Mode::CUBIC) ==
              static_cast<uint32_t>(param::Resize::InterpolationMode::CUBIC));

// Why the params or the (N, C, H, W) tensor `src` cannot be resampled; empty when they can.
std::string resize_problem(const param::Resize& p, const TensorShape& src) {
    if (p.mode != param::Resize::InterpolationMode::LINEAR && p.align_corners)
        return "align_corners applies to LINEAR mode only";
    bool out_empty = p.out_h == 0 || p.out_w == 0;
    if (!out_empty && (src.shape[2] == 0 || src.shape[3] == 0))
        return "cannot resample an empty image to a non-empty one";
    return {};
}

}  // namespace

void Resize::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim == 4, "src must be NCHW (4-D), got ", src.to_string());
    NM_REQUIRE(DTypeError, src.dtype.is_float(), "dtype ", src.dtype.name(),
               " is not supported (float only), src ", src.to_string());
    std::string why = resize_problem(m_param, src);
    NM_REQUIRE(ParamError, why.empty(), why, " (src ", src.to_string(), ")");
    outputs[0] =
            TensorLayout({src.shape[0], src.shape[1], m_param.out_h, m_param.out_w}, src.dtype);
}

void ResizeBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& diff = inputs[0];
    TensorLayout& grad = outputs[0];
    NM_REQUIRE(ShapeError, diff.ndim == 4 && grad.ndim == 4,
               "diff and grad must be NCHW (4-D), got diff ", diff.to_string(), " and grad shape ",
               grad.TensorShape::to_string());
    NM_REQUIRE(DTypeError, diff.dtype.is_float(), "dtype ", diff.dtype.name(),
               " is not supported (float only), diff ", diff.to_string());
    NM_REQUIRE(ShapeError,
               diff.shape[0] == grad.shape[0] && diff.shape[1] == grad.shape[1] &&
                       diff.shape[2] == m_param.out_h && diff.shape[3] == m_param.out_w,
               "diff ", diff.to_string(), " must be (N, C, out_h, out_w) with grad's N, C; grad ",
               grad.TensorShape::to_string());
    std::string why = resize_problem(m_param, grad);
    NM_REQUIRE(ParamError, why.empty(), why, " (grad shape ", grad.TensorShape::to_string(), ")");
    grad.dtype = diff.dtype;
    grad.init_contiguous_stride();
}

}  // namespace neomeg::dnn
