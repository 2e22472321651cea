// Layout rule of ConvBias: the forward convolution's, plus bias broadcasting to dst and z equal to
// dst. Following MegDNN, a bias or z of ndim 0 means "absent".
#include "neomeg/dnn/operators/convolution.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

void ConvBias::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &filter = inputs[1], &bias = inputs[2], &z = inputs[3];
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
