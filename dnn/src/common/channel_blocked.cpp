// Layout rules of ChannelBlock, ChannelUnblock, ConvBiasBlocked and PoolingBlocked.
#include "src/common/channel_blocked.h"

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/pooling.h"

namespace neomeg::dnn {

TensorShape blocked_shape(const TensorShape& plain, size_t block) {
    TensorShape s = plain;
    s.ndim = plain.ndim + 1;
    s[1] = channel_blocks(plain[1], block);
    s[plain.ndim] = block;
    return s;
}

TensorShape unblocked_shape(const TensorShape& blocked, size_t channels) {
    TensorShape s = blocked;
    s.ndim = blocked.ndim - 1;
    s[1] = channels;
    return s;
}

void ChannelBlock::deduce_layout(std::span<const TensorLayout> inputs,
                                 std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ParamError, m_param.block >= 1, "block must be >= 1");
    NM_REQUIRE(ShapeError, src.ndim >= 2 && src.ndim < TensorShape::MAX_NDIM,
               "src must be (N, C, spatial...) with at most ", TensorShape::MAX_NDIM - 1,
               " dims, got ", src.to_string());
    outputs[0] = TensorLayout(blocked_shape(src, m_param.block), src.dtype);
}

void ChannelUnblock::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim >= 3, "src must be (N, Cb, spatial..., block), got ",
               src.to_string());
    const size_t block = src[src.ndim - 1];
    NM_REQUIRE(ShapeError, block >= 1, "src's block (last dim) must be >= 1, got ",
               src.to_string());
    NM_REQUIRE(ShapeError, channel_blocks(m_param.channels, block) == src[1], m_param.channels,
               " channels take ", channel_blocks(m_param.channels, block), " blocks of ", block,
               ", src ", src.to_string(), " has ", src[1]);
    outputs[0] = TensorLayout(unblocked_shape(src, m_param.channels), src.dtype);
}

BlockedConvShapes blocked_conv_shapes(const ConvBiasBlocked& op,
                                      std::span<const TensorLayout> inputs) {
    const TensorLayout &src = inputs[0], &filter = inputs[1], &bias = inputs[2], &z = inputs[3];
    const size_t block = op.param().block;
    NM_OP_REQUIRE(op, ParamError, block >= 1, "block must be >= 1");
    NM_OP_REQUIRE(op, ShapeError, filter.ndim >= 3 && filter.ndim <= 2 + kMaxConvSpatial,
                  "filter must be (OC, IC/group, k...) with 1 to 3 spatial dims, got ",
                  filter.to_string());
    BlockedConvShapes s;
    s.src_blocked = src.ndim == filter.ndim + 1;
    NM_OP_REQUIRE(op, ShapeError, s.src_blocked || src.ndim == filter.ndim, "src ", src.to_string(),
                  " is neither plain nor blocked for filter ", filter.to_string());
    s.plain_src = src;
    if (s.src_blocked) {
        NM_OP_REQUIRE(op, ShapeError, src[src.ndim - 1] == block, "blocked src ", src.to_string(),
                      " has blocks of ", src[src.ndim - 1], ", the param says ", block);
        const size_t ic = static_cast<size_t>(filter[1]) * op.param().group;
        NM_OP_REQUIRE(op, ShapeError, channel_blocks(ic, block) == src[1], "blocked src ",
                      src.to_string(), " does not hold the ", ic, " input channels of filter ",
                      filter.to_string());
        s.plain_src = TensorLayout(unblocked_shape(src, ic), src.dtype);
    }
    s.geometry = conv_forward_geometry(op, ConvArgs::of(op.param()), s.plain_src, filter);
    s.plain_dst = conv_dst_layout(s.geometry, src.dtype);
    s.dst = TensorLayout(blocked_shape(s.plain_dst, block), src.dtype);
    if (bias.ndim != 0) {
        bool fits = bias.ndim == s.plain_dst.ndim;
        for (size_t i = 0; fits && i < bias.ndim; ++i)
            fits = bias[i] == 1 || bias[i] == s.plain_dst[i];
        NM_OP_REQUIRE(op, ShapeError, fits, "bias ", bias.to_string(), " does not broadcast to ",
                      s.plain_dst.TensorShape::to_string(), " (src ", src.to_string(), ", filter ",
                      filter.to_string(), ")");
        NM_OP_REQUIRE(op, DTypeError, bias.dtype == src.dtype, "bias dtype ", bias.dtype.name(),
                      " differs from src's ", src.dtype.name());
    }
    if (z.ndim != 0) {
        NM_OP_REQUIRE(op, ShapeError, z.eq_shape(s.dst), "z ", z.to_string(),
                      " must have the blocked dst's shape ", s.dst.TensorShape::to_string());
        NM_OP_REQUIRE(op, DTypeError, z.dtype == src.dtype, "z dtype ", z.dtype.name(),
                      " differs from src's ", src.dtype.name());
    }
    return s;
}

void ConvBiasBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = blocked_conv_shapes(*this, inputs).dst;
}

BlockedPoolShapes blocked_pool_shapes(const PoolingBlocked& op, const TensorLayout& src) {
    NM_OP_REQUIRE(op, ShapeError, src.ndim >= 4 && src.ndim <= 3 + kMaxPoolSpatial,
                  "src must be (N, Cb, spatial..., block) with 1 to 3 spatial dims, got ",
                  src.to_string());
    BlockedPoolShapes s;
    s.block = src[src.ndim - 1];
    NM_OP_REQUIRE(op, ShapeError, s.block >= 1, "src's block (last dim) must be >= 1, got ",
                  src.to_string());
    s.plain_src = TensorLayout(unblocked_shape(src, src[1] * s.block), src.dtype);
    PoolGeometry g = pooling_geometry(op, op.param(), s.plain_src);
    s.plain_dst = pool_dst_layout(g, src.dtype);
    s.dst = TensorLayout(blocked_shape(s.plain_dst, s.block), src.dtype);
    return s;
}

void PoolingBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = blocked_pool_shapes(*this, inputs[0]).dst;
}

}  // namespace neomeg::dnn
