// Layout rules of Padding and PaddingBackward: one front and one back width per dim of src;
// dst = src + front + back in each dim, and grad = diff - front - back. REFLECT and REPLICATE
// take border values from src, so a padded dim of src must not be empty.
#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {
namespace {

// Why the widths do not suit a tensor of `ndim` dims; empty when they do.
std::string widths_problem(const param::Padding& p, size_t ndim) {
    if (p.front_offsets.size() != ndim || p.back_offsets.size() != ndim)
        return str_cat("needs ", ndim, " front and back offsets, got ", p.front_offsets.size(),
                       " and ", p.back_offsets.size());
    for (size_t d = 0; d < ndim; ++d)
        if (p.front_offsets[d] < 0 || p.back_offsets[d] < 0)
            return str_cat("offsets of dim ", d, " are negative");
    return {};
}

// Why `src` (the unpadded shape) cannot supply border values; empty when it can.
std::string border_problem(const param::Padding& p, const TensorShape& src) {
    if (p.mode == param::Padding::Mode::CONSTANT)
        return {};
    for (size_t d = 0; d < src.ndim; ++d)
        if (src.shape[d] == 0 && (p.front_offsets[d] > 0 || p.back_offsets[d] > 0))
            return str_cat("cannot pad the empty dim ", d, " in mode ", to_string(p.mode));
    return {};
}

}  // namespace

void Padding::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    std::string why = widths_problem(m_param, src.ndim);
    NM_REQUIRE(ParamError, why.empty(), why, " (src ", src.to_string(), ")");
    why = border_problem(m_param, src);
    NM_REQUIRE(ShapeError, why.empty(), why, " (src ", src.to_string(), ")");
    TensorShape shape = src;
    for (size_t d = 0; d < src.ndim; ++d)
        shape[d] += static_cast<size_t>(m_param.front_offsets[d]) +
                    static_cast<size_t>(m_param.back_offsets[d]);
    outputs[0] = TensorLayout(shape, src.dtype);
}

void PaddingBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& diff = inputs[0];
    NM_REQUIRE(DTypeError, diff.dtype.is_float(), "dtype ", diff.dtype.name(),
               " is not supported (float only), diff ", diff.to_string());
    std::string why = widths_problem(m_param, diff.ndim);
    NM_REQUIRE(ParamError, why.empty(), why, " (diff ", diff.to_string(), ")");
    TensorShape shape = diff;
    for (size_t d = 0; d < diff.ndim; ++d) {
        auto pad = static_cast<size_t>(m_param.front_offsets[d]) +
                   static_cast<size_t>(m_param.back_offsets[d]);
        NM_REQUIRE(ShapeError, diff.shape[d] >= pad, "diff ", diff.to_string(),
                   " is smaller than the padding ", pad, " of dim ", d);
        shape[d] -= pad;
    }
    why = border_problem(m_param, shape);
    NM_REQUIRE(ShapeError, why.empty(), why, " (diff ", diff.to_string(), ")");
    outputs[0] = TensorLayout(shape, diff.dtype);
}

}  // namespace neomeg::dnn
