// Layout rule of ConvBias: the forward convolution's, plus bias broadcasting to dst and z equal to
// dst. Following MegDNN, a bias or z of ndim 0 means "absent".
#include <cmath>
#include "neomeg/dnn/operators/convolution.h"

#include "src/common/conv_bias_quantized.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {
namespace {

// The quantized case: src QuantizedS8 or Quantized8Asymm, filter QuantizedS8, bias QuantizedS32 of
// scale src x filter (MegDNN's rule, to 1e-6 relative), no z, IDENTITY or RELU. dst is the exact
// int32 sum, QuantizedS32 of that scale; requantising to 8 bits is a TypeCvt after it, where
// MegEngine's fused ConvBias rounds the same value once.
DType quantized_conv_dtype(const ConvBias& op, const TensorLayout& src, const TensorLayout& filter,
                           const TensorLayout& bias, const TensorLayout& z) {
    NM_OP_REQUIRE(op, DTypeError,
                  src.dtype.enumv() == DTypeEnum::QuantizedS8 ||
                          src.dtype.enumv() == DTypeEnum::Quantized8Asymm,
                  "quantized src must be QuantizedS8 or Quantized8Asymm, got ",
                  src.dtype.full_name());
    NM_OP_REQUIRE(op, DTypeError, filter.dtype.enumv() == DTypeEnum::QuantizedS8,
                  "a quantized src needs a QuantizedS8 filter, got ", filter.dtype.full_name());
    const float scale = src.dtype.scale() * filter.dtype.scale();
    if (bias.ndim != 0) {
        NM_OP_REQUIRE(op, DTypeError,
                      bias.dtype.enumv() == DTypeEnum::QuantizedS32 &&
                              std::abs(bias.dtype.scale() - scale) <= 1e-6f * scale,
                      "bias must be QuantizedS32(", scale, ") (src scale x filter scale), got ",
                      bias.dtype.full_name());
    }
    NM_OP_REQUIRE(op, NotSupportedError, z.ndim == 0, "z is not supported with quantized dtypes");
    using Mode = param::ConvBias::NonlineMode;
    const Mode mode = op.param().nonlineMode;
    NM_OP_REQUIRE(op, NotSupportedError, mode == Mode::IDENTITY || mode == Mode::RELU,
                  "a quantized ConvBias applies IDENTITY or RELU (exact on the int32 sums); "
                  "apply other nonlinearities after requantising");
    return DType::quantized_s32(scale);
}

}  // namespace

ConvGeometry quantized_conv_geometry(const ConvBias& op, const TensorLayout& src,
                                     const TensorLayout& filter) {
    // The geometry rule checks shapes and a float dtype; the dtypes were checked above.
    return conv_forward_geometry(op, ConvArgs::of(op.param()), TensorLayout(src, dtype::Float32),
                                 TensorLayout(filter, dtype::Float32));
}

void ConvBias::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &filter = inputs[1], &bias = inputs[2], &z = inputs[3];
    if (src.dtype.is_quantized() || filter.dtype.is_quantized()) {
        DType dt = quantized_conv_dtype(*this, src, filter, bias, z);
        outputs[0] = conv_dst_layout(quantized_conv_geometry(*this, src, filter), dt);
        return;
    }
    ConvGeometry g = conv_forward_geometry(*this, ConvArgs::of(m_param), src, filter);
    TensorLayout dst = conv_dst_layout(g, src.dtype);
    if (bias.ndim != 0) {
        bool fits = bias.ndim == dst.ndim;
        for (size_t i = 0; fits && i < dst.ndim; ++i)
            fits = bias[i] == 1 || bias[i] == dst[i];
        NM_REQUIRE(ShapeError, fits, "bias ", bias.to_string(), " does not broadcast to dst ",
                   dst.TensorShape::to_string(), " (src ", src.to_string(), ", filter ",
                   filter.to_string(), ")");
        NM_REQUIRE(DTypeError, bias.dtype == src.dtype, "bias dtype ", bias.dtype.name(),
                   " differs from src's ", src.dtype.name());
    }
    if (z.ndim != 0) {
        NM_REQUIRE(ShapeError, z.eq_shape(dst), "z ", z.to_string(), " must have dst's shape ",
                   dst.TensorShape::to_string(), " (src ", src.to_string(), ", filter ",
                   filter.to_string(), ")");
        NM_REQUIRE(DTypeError, z.dtype == src.dtype, "z dtype ", z.dtype.name(),
                   " differs from src's ", src.dtype.name());
    }
    outputs[0] = dst;
}

}  // namespace neomeg::dnn
