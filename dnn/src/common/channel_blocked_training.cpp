// Layout rules of the blocked training ops (ConvolutionBackwardDataBlocked,
// ConvolutionBackwardFilterBlocked, BatchNormForwardBlocked, BatchNormBackwardBlocked and their
// relu and residual add + relu fusions): the plain ops' rules applied to the plain shapes of the
// blocked tensors.
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/norm.h"
#include "src/common/batch_norm_layout.h"
#include "src/common/channel_blocked.h"
#include "src/common/conv_backward_layout.h"

namespace neomeg::dnn {

TensorLayout plain_of_blocked(const OperatorBase& op, const char* what, const TensorLayout& blocked,
                              size_t channels, size_t plain_ndim) {
    NM_OP_REQUIRE(op, ShapeError, blocked.ndim == plain_ndim + 1 && blocked.ndim >= 3, what, " ",
                  blocked.to_string(), " is not a blocked (N, Cb, spatial..., block) tensor of a ",
                  plain_ndim, "-D one");
    const size_t block = blocked[blocked.ndim - 1];
    NM_OP_REQUIRE(op, ShapeError, block >= 1 && channel_blocks(channels, block) == blocked[1], what,
                  " ", blocked.to_string(), ": ", channels, " channels take ",
                  block ? channel_blocks(channels, block) : 0, " blocks of ", block);
    return TensorLayout(unblocked_shape(blocked, channels), blocked.dtype);
}

namespace {

// A preset blocked grad as its plain shape (ndim 0: none).
TensorLayout plain_preset(const OperatorBase& op, const TensorLayout& preset, size_t channels,
                          size_t plain_ndim, size_t block) {
    if (preset.ndim == 0)
        return preset;
    TensorLayout p = plain_of_blocked(op, "preset grad", TensorLayout(preset, preset.dtype),
                                      channels, plain_ndim);
    NM_OP_REQUIRE(op, ShapeError, preset[preset.ndim - 1] == block, "preset grad ",
                  preset.TensorShape::to_string(), " has another block than diff's ", block);
    return p;
}

void check_filter_rank(const OperatorBase& op, const char* what, const TensorLayout& filter) {
    NM_OP_REQUIRE(op, ShapeError, filter.ndim >= 3 && filter.ndim <= 2 + kMaxConvSpatial, what,
                  " must be (OC, IC/group, k...) with 1 to 3 spatial dims, got ",
                  filter.to_string());
}

}  // namespace

void ConvolutionBackwardDataBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &filter = inputs[0], &diff = inputs[1];
    check_filter_rank(*this, "filter", filter);
    const ConvArgs args = ConvArgs::of(m_param);
    const size_t oc = filter[0], ic = filter[1] * args.group;
    TensorLayout plain_diff = plain_of_blocked(*this, "diff", diff, oc, filter.ndim);
    const size_t block = diff[diff.ndim - 1];
    TensorLayout preset = plain_preset(*this, outputs[0], ic, filter.ndim, block);
    TensorLayout grad = conv_backward_data_grad(*this, args, filter, plain_diff, preset);
    outputs[0] = TensorLayout(blocked_shape(grad, block), grad.dtype);
}

void ConvolutionBackwardFilterBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                     std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &diff = inputs[1];
    // A blocked src holds its channel count only rounded up to the block: the caller presets
    // the filter's shape, which fixes both channel counts.
    const TensorLayout& preset = outputs[0];
    NM_REQUIRE(ShapeError, preset.ndim != 0,
               "the filter gradient's shape must be preset (src and diff are blocked)");
    check_filter_rank(*this, "preset grad", preset);
    const ConvArgs args = ConvArgs::of(m_param);
    const size_t oc = preset[0], ic = preset[1] * args.group;
    TensorLayout plain_src = plain_of_blocked(*this, "src", src, ic, preset.ndim);
    TensorLayout plain_diff = plain_of_blocked(*this, "diff", diff, oc, preset.ndim);
    NM_REQUIRE(ShapeError, src[src.ndim - 1] == diff[diff.ndim - 1], "src ", src.to_string(),
               " and diff ", diff.to_string(), " have different blocks");
    outputs[0] = conv_backward_filter_grad(*this, args, plain_src, plain_diff,
                                           TensorLayout(preset, diff.dtype));
}

namespace {

void bn_forward_blocked_layouts(const OperatorBase& op, const param::BatchNorm& param,
                                std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    const TensorLayout& src = inputs[0];
    const size_t plain_ndim = src.ndim ? src.ndim - 1 : 0;
    std::array<TensorLayout, 5> plain_in;
    std::copy(inputs.begin(), inputs.end(), plain_in.begin());
    plain_in[0] = plain_of_blocked(op, "src", src, bn_channels(inputs[1]), plain_ndim);
    batch_norm_forward_layouts(op, param, plain_in, outputs);
    outputs[0] = TensorLayout(src, src.dtype);
}

// The first five inputs: BatchNormBackwardBlocked's.
void bn_backward_blocked_layouts(const OperatorBase& op, std::span<const TensorLayout> inputs,
                                 std::span<TensorLayout> outputs) {
    const TensorLayout &diff = inputs[0], &src = inputs[1];
    const size_t plain_ndim = src.ndim ? src.ndim - 1 : 0, channels = bn_channels(inputs[2]);
    std::array<TensorLayout, 5> plain_in;
    std::copy(inputs.begin(), inputs.begin() + 5, plain_in.begin());
    plain_in[0] = plain_of_blocked(op, "diff", diff, channels, plain_ndim);
    plain_in[1] = plain_of_blocked(op, "src", src, channels, plain_ndim);
    NM_OP_REQUIRE(op, ShapeError, diff.eq_shape(src), "diff ", diff.to_string(), " and src ",
                  src.to_string(), " differ in shape");
    batch_norm_backward_layouts(op, plain_in, outputs);
    outputs[0] = TensorLayout(src, src.dtype);
}

}  // namespace

void BatchNormForwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                            std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    bn_forward_blocked_layouts(*this, m_param, inputs, outputs);
}

void BatchNormReluForwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    bn_forward_blocked_layouts(*this, m_param, inputs, outputs);
}

void BatchNormBackwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    bn_backward_blocked_layouts(*this, inputs, outputs);
}

void BatchNormReluBackwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                 std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &diff = inputs[0], &relu_dst = inputs[5];
    NM_OP_REQUIRE(*this, ShapeError, relu_dst.eq_shape(diff), "relu_dst ", relu_dst.to_string(),
                  " and diff ", diff.to_string(), " differ in shape");
    NM_OP_REQUIRE(*this, DTypeError, relu_dst.dtype == diff.dtype, "relu_dst is ",
                  relu_dst.dtype.name(), ", diff ", diff.dtype.name());
    bn_backward_blocked_layouts(*this, inputs, outputs);
}

namespace {

// `what` has `like`'s shape and dtype.
void require_like(const OperatorBase& op, const char* what, const TensorLayout& t,
                  const char* like_name, const TensorLayout& like) {
    NM_OP_REQUIRE(op, ShapeError, t.eq_shape(like), what, " ", t.to_string(), " and ", like_name,
                  " ", like.to_string(), " differ in shape");
    NM_OP_REQUIRE(op, DTypeError, t.dtype == like.dtype, what, " is ", t.dtype.name(), ", ",
                  like_name, " ", like.dtype.name());
}

}  // namespace

void BatchNormAddReluForwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    require_like(*this, "z", inputs[5], "src", inputs[0]);
    bn_forward_blocked_layouts(*this, m_param, inputs.first(5), outputs);
}

void BatchNormAddReluBackwardBlocked::deduce_layout(std::span<const TensorLayout> inputs,
                                                    std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& diff = inputs[0];
    require_like(*this, "diff_add", inputs[1], "diff", diff);
    require_like(*this, "relu_dst", inputs[6], "diff", diff);
    // BatchNormBackwardBlocked's inputs: diff, src, scale, saved_mean, saved_inv_std.
    const std::array<TensorLayout, 5> bn_in{diff, inputs[2], inputs[3], inputs[4], inputs[5]};
    bn_backward_blocked_layouts(*this, bn_in, outputs.first(3));
    outputs[3] = TensorLayout(diff, diff.dtype);
}

}  // namespace neomeg::dnn
