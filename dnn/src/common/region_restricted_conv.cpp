// Layout rules of RegionRestrictedConvolutionForward, RegionRestrictedConvolutionBackwardData and
// RegionRestrictedConvolutionBackwardFilter. The gradients' shapes (src's, filter's) are preset by
// the caller: a strided convolution's output does not determine its input size.
#include "src/common/region_restricted_conv.h"

#include "neomeg/dnn/operators/convolution.h"

namespace neomeg::dnn {

ConvGeometry region_restricted_geometry(const OperatorBase& op,
                                        const param::RegionRestrictedConvolution& p,
                                        const TensorLayout& src, const TensorLayout& filter,
                                        const TensorLayout& rin, const TensorLayout& rout) {
    NM_OP_REQUIRE(op, ShapeError, src.ndim == 4, "src must be NCHW (4-D), got ", src.to_string());
    ConvGeometry g = conv_forward_geometry(op, {false, p.stride, p.padding, p.dilation, p.group},
                                           src, filter);
    auto shapes = [&] {
        return str_cat("src ", src.to_string(), ", rin ", rin.to_string(), ", rout ",
                       rout.to_string());
    };
    NM_OP_REQUIRE(
            op, DTypeError,
            rin.dtype == rout.dtype && (rin.dtype == dtype::Int32 || rin.dtype == dtype::Uint8),
            "rin and rout must both be int32 or both uint8; ", shapes());
    NM_OP_REQUIRE(op, ShapeError,
                  rin.ndim == 3 && rin[0] == g.n && rin[1] == g.in[1] && rin[2] == g.in[2],
                  "rin must be (N, IH, IW) = (", g.n, ", ", g.in[1], ", ", g.in[2], "); ",
                  shapes());
    NM_OP_REQUIRE(op, ShapeError,
                  rout.ndim == 3 && rout[0] == g.n && rout[1] == g.out[1] && rout[2] == g.out[2],
                  "rout must be (N, OH, OW) = (", g.n, ", ", g.out[1], ", ", g.out[2], "); ",
                  shapes());
    return g;
}

namespace {

void check_diff(const OperatorBase& op, const ConvGeometry& g, const TensorLayout& diff,
                DType dtype) {
    TensorLayout want = conv_dst_layout(g, dtype);
    NM_OP_REQUIRE(op, ShapeError, want.eq_shape(diff),
                  "diff must be (N, OC, OH, OW) = ", want.to_string(), ", got ", diff.to_string());
    NM_OP_REQUIRE(op, DTypeError, diff.dtype == dtype, "diff ", diff.to_string(),
                  " must have dtype ", dtype.name());
}

void require_preset(const OperatorBase& op, const TensorLayout& grad, const char* what) {
    NM_OP_REQUIRE(op, ShapeError, grad.ndim == 4, "grad (", what, ") must be preset, got shape ",
                  grad.TensorShape::to_string());
}

}  // namespace

void RegionRestrictedConvolutionForward::deduce_layout(std::span<const TensorLayout> inputs,
                                                       std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    auto g = region_restricted_geometry(*this, m_param, inputs[0], inputs[1], inputs[2], inputs[3]);
    outputs[0] = conv_dst_layout(g, inputs[0].dtype);
}

void RegionRestrictedConvolutionBackwardData::deduce_layout(std::span<const TensorLayout> inputs,
                                                            std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &filter = inputs[0], &diff = inputs[1];
    TensorLayout& grad = outputs[0];
    require_preset(*this, grad, "src's shape, N, IC, IH, IW");
    grad.dtype = filter.dtype;
    auto g = region_restricted_geometry(*this, m_param, grad, filter, inputs[2], inputs[3]);
    check_diff(*this, g, diff, filter.dtype);
    grad.init_contiguous_stride();
}

void RegionRestrictedConvolutionBackwardFilter::deduce_layout(std::span<const TensorLayout> inputs,
                                                              std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &diff = inputs[1];
    TensorLayout& grad = outputs[0];
    require_preset(*this, grad, "the filter's shape, OC, IC/group, FH, FW");
    grad.dtype = src.dtype;
    auto g = region_restricted_geometry(*this, m_param, src, grad, inputs[2], inputs[3]);
    check_diff(*this, g, diff, src.dtype);
    grad.init_contiguous_stride();
}

}  // namespace neomeg::dnn
