// ChannelBlock's layout (dnn/ops/defs/tensor_shape.py): (N, C, spatial...) held as the dense
// (N, ceil(C/block), spatial..., block), channel c at [n, c / block, spatial..., c % block]. The
// shape rules of the ops on it (ChannelBlock, ChannelUnblock, ConvBiasBlocked, PoolingBlocked),
// shared with their kernels.
#pragma once

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

inline size_t channel_blocks(size_t channels, size_t block) {
    return (channels + block - 1) / block;
}

// (N, C, spatial...) -> (N, ceil(C/block), spatial..., block). The caller checks the rank.
TensorShape blocked_shape(const TensorShape& plain, size_t block);
// (N, Cb, spatial..., block) -> (N, channels, spatial...).
TensorShape unblocked_shape(const TensorShape& blocked, size_t channels);

// ConvBiasBlocked's shapes: its src and dst as plain tensors, and the convolution's geometry.
struct BlockedConvShapes {
    ConvGeometry geometry;
    bool src_blocked = false;
    TensorLayout plain_src, plain_dst, dst;  // dst: blocked, contiguous
};
// Validates src, filter, bias and z of a ConvBiasBlocked (ShapeError/DTypeError/ParamError
// naming `op`) and gives its shapes.
BlockedConvShapes blocked_conv_shapes(const ConvBiasBlocked& op,
                                      std::span<const TensorLayout> inputs);

// PoolingBlocked's src viewed as plain (N, Cb * block, spatial...) for the pooling rules, and its
// blocked dst; the checks name `op`.
struct BlockedPoolShapes {
    TensorLayout plain_src, plain_dst, dst;
    size_t block = 0;
};
BlockedPoolShapes blocked_pool_shapes(const PoolingBlocked& op, const TensorLayout& src);

}  // namespace neomeg::dnn

namespace neomeg::dnn {

// A blocked tensor's plain layout (N, channels, spatial...), contiguous, after checking (errors
// name `op` and `what`) that it is (N, ceil(channels/block), spatial..., block) of rank
// `plain_ndim` + 1.
TensorLayout plain_of_blocked(const OperatorBase& op, const char* what, const TensorLayout& blocked,
                              size_t channels, size_t plain_ndim);

// The channel count a per-channel BatchNorm tensor ({C} or {1, C, 1, ...}) gives.
inline size_t bn_channels(const TensorLayout& per_channel) {
    return per_channel.ndim == 1 ? per_channel[0] : per_channel.ndim > 1 ? per_channel[1] : 0;
}

}  // namespace neomeg::dnn
