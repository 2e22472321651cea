// Layout rules of DeformableConvForward, DeformableConvBackwardData and
// DeformableConvBackwardFilter. The deformable group count is offset's channels / (2 * FH * FW),
// as MegEngine deduces it; mask must agree.
#include "src/common/deformable_conv.h"

#include "neomeg/dnn/operators/convolution.h"

namespace neomeg::dnn {

DeformableGeometry deformable_conv_geometry(const OperatorBase& op, const param::DeformableConv& p,
                                            const TensorLayout& src, const TensorLayout& filter,
                                            const TensorLayout& offset, const TensorLayout& mask) {
    NM_OP_REQUIRE(op, ShapeError, src.ndim == 4, "src must be NCHW (4-D), got ", src.to_string());
    DeformableGeometry g;
    g.conv = conv_forward_geometry(op, {false, p.stride, p.padding, p.dilation, p.group}, src,
                                   filter);
    auto shapes = [&] {
        return str_cat("src ", src.to_string(), ", filter ", filter.to_string(), ", offset ",
                       offset.to_string(), ", mask ", mask.to_string());
    };
    NM_OP_REQUIRE(op, DTypeError, offset.dtype == src.dtype && mask.dtype == src.dtype,
                  "offset and mask must have src's dtype; ", shapes());
    NM_OP_REQUIRE(op, ShapeError, offset.ndim == 4 && mask.ndim == 4,
                  "offset and mask must be (N, C, OH, OW); ", shapes());
    size_t taps = g.fh() * g.fw();
    g.dg = offset[1] / (2 * taps);
    NM_OP_REQUIRE(op, ShapeError, g.dg >= 1 && offset[1] == 2 * taps * g.dg,
                  "offset must have 2 * deformable_group * FH * FW channels; ", shapes());
    NM_OP_REQUIRE(op, ShapeError, mask[1] == taps * g.dg,
                  "mask must have deformable_group * FH * FW channels (deformable_group ", g.dg,
                  " from offset); ", shapes());
    NM_OP_REQUIRE(op, ShapeError, g.conv.ic % g.dg == 0, "deformable_group ", g.dg,
                  " must divide the input channels ", g.conv.ic, "; ", shapes());
    for (const TensorLayout* l : {&offset, &mask})
        NM_OP_REQUIRE(op, ShapeError, (*l)[0] == g.conv.n && (*l)[2] == g.oh() && (*l)[3] == g.ow(),
                      "offset and mask must be (N, C, OH, OW) = (", g.conv.n, ", C, ", g.oh(), ", ",
                      g.ow(), "); ", shapes());
    return g;
}

void DeformableConvForward::deduce_layout(std::span<const TensorLayout> inputs,
                                          std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    auto g = deformable_conv_geometry(*this, m_param, inputs[0], inputs[1], inputs[2], inputs[3]);
    outputs[0] = conv_dst_layout(g.conv, inputs[0].dtype);
}

namespace {

void check_diff(const OperatorBase& op, const DeformableGeometry& g, const TensorLayout& diff,
                DType dtype) {
    NM_OP_REQUIRE(op, ShapeError, diff.ndim == 4 && conv_dst_layout(g.conv, dtype).eq_shape(diff),
                  "diff must be (N, OC, OH, OW) = ", conv_dst_layout(g.conv, dtype).to_string(),
                  ", got ", diff.to_string());
    NM_OP_REQUIRE(op, DTypeError, diff.dtype == dtype, "diff ", diff.to_string(),
                  " must have dtype ", dtype.name());
}

}  // namespace

void DeformableConvBackwardData::deduce_layout(std::span<const TensorLayout> inputs,
                                               std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &offset = inputs[2], &mask = inputs[3];
    auto g = deformable_conv_geometry(*this, m_param, src, inputs[1], offset, mask);
    check_diff(*this, g, inputs[4], src.dtype);
    outputs[0] = TensorLayout(src, src.dtype);
    outputs[1] = TensorLayout(offset, src.dtype);
    outputs[2] = TensorLayout(mask, src.dtype);
}

void DeformableConvBackwardFilter::deduce_layout(std::span<const TensorLayout> inputs,
                                                 std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &diff = inputs[3];
    TensorLayout& grad = outputs[0];
    // The kernel size is not in the inputs (offset's channels mix it with the group count).
    NM_REQUIRE(ShapeError, grad.ndim == 4,
               "grad (the filter's shape, OC, IC/group, FH, FW) must be preset, got shape ",
               grad.TensorShape::to_string());
    grad.dtype = src.dtype;
    auto g = deformable_conv_geometry(*this, m_param, src, grad, inputs[1], inputs[2]);
    check_diff(*this, g, diff, src.dtype);
    grad.init_contiguous_stride();
}

}  // namespace neomeg::dnn
