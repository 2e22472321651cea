// Which operators run on ChannelBlock's layout (dnn/ops/defs/tensor_shape.py: (N, ceil(C/b),
// spatial..., b), oneDNN's nC[d][h]w8c / 16c as a dense tensor of one more dim): the rules that
// depend only on layouts and params. Two users share them: the graph's layout pass
// (src/graph/passes/propagate_channel_blocked.cpp), which sees the whole graph, and eager mode's
// dispatch (imperative/src/blocked_dispatch.cpp), which sees one op at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/params/convolution.h"
#include "neomeg/dnn/params/elemwise.h"

namespace neomeg::dnn::channel_blocked {

// (N, C, W), (N, C, H, W) or (N, C, D, H, W) float32 with elements: oneDNN's nCw / nChw / nCdhw
// blocked formats. (A dynamic shape is the caller's to exclude.)
inline bool plain_spatial_f32(const TensorShape& s, DType dtype) {
    return s.ndim >= 3 && s.ndim <= 5 && dtype == dtype::Float32 && !s.is_empty();
}

// An elementwise mode that maps zeros to zero, so the padding channels of the last block stay
// zero, which the blocked kernels rely on.
inline bool zero_preserving(param::Elemwise::Mode m) {
    using Mode = param::Elemwise::Mode;
    switch (m) {
        case Mode::RELU:
        case Mode::ABS:
        case Mode::NEGATE:
        case Mode::ADD:
        case Mode::SUB:
        case Mode::MUL:
        case Mode::MAX:
        case Mode::MIN:
        case Mode::SQUARE:
        case Mode::SWITCH_GT0:
        case Mode::ABS_GRAD:
            return true;
        default:
            return false;
    }
}

// Groups oneDNN convolves on blocked memory with its own kernels: one; depthwise (a group per
// channel, in and out: Goihw16g); or groups of whole blocks. Others would get its reference kernel.
inline bool blockable_groups(uint32_t group, size_t ic, size_t oc, size_t block) {
    return group == 1 || (group == ic && group == oc) ||
           (ic % group == 0 && oc % group == 0 && (ic / group) % block == 0 &&
            (oc / group) % block == 0);
}

// A ConvBias bias ConvBiasBlocked takes: (1, OC, 1...) of dst's rank.
inline bool per_channel_bias(const TensorShape& bias, const TensorShape& dst) {
    if (bias.ndim != dst.ndim)
        return false;
    for (size_t d = 0; d < bias.ndim; ++d)
        if (bias[d] != (d == 1 ? dst[1] : 1))
            return false;
    return true;
}

// How an elementwise op on blocked tensors reads an operand: of dst's shape, per channel
// (1, C, 1...), both blocked; or a scalar (one element, 0-d included), plain (it broadcasts
// against the blocked shape as against the plain one).
enum class Operand { Full, PerChannel, Scalar, Other };

inline Operand operand_kind(const TensorLayout& v, const TensorLayout& dst) {
    if (v.dtype != dst.dtype)
        return Operand::Other;
    if (v.eq_shape(dst))
        return Operand::Full;
    if (v.ndim == dst.ndim && v[0] == 1 && v[1] == dst[1] && v.total_nr_elems() == v[1])
        return Operand::PerChannel;
    return v.ndim <= dst.ndim && v.total_nr_elems() == 1 ? Operand::Scalar : Operand::Other;
}

// Whether an elementwise op of `mode` may write dst (N, C, ...) in blocked form, from operands of
// these kinds (none Other, one at least Full; `finite_scalars()`: whether every Scalar operand is
// a finite value, asked only when it decides). Where C fills its blocks the blocked tensors hold
// the plain elements and nothing else, so every mode may (a scalar or per-channel operand
// broadcasts alike on both layouts); with padding channels f must keep their zeros: a
// zero-preserving mode whose scalar operands, which meet those zeros, are finite factors of MUL.
template <class FiniteScalars>
bool elemwise_keeps_padding(param::Elemwise::Mode mode, size_t channels, size_t block,
                            bool has_scalar, FiniteScalars&& finite_scalars) {
    if (channels % block == 0)
        return true;
    if (!zero_preserving(mode))
        return false;
    return !has_scalar || (mode == param::Elemwise::Mode::MUL && finite_scalars());
}

// ChannelBlock's shape of a plain (N, C, spatial...) one.
inline TensorShape blocked_shape(TensorShape s, size_t block) {
    s[s.ndim] = block;
    s[1] = (s[1] + block - 1) / block;
    s.ndim += 1;
    return s;
}

// A contiguous blocked (N, Cb, spatial..., b) layout as the plain strided (N * Cb, b, spatial...)
// one it also is (a dense channels-last-like order, channels of stride 1): every channel of every
// block a plane, so an operator that works plane by plane (pooling, forward and backward) runs on
// blocked memory unchanged, its padding planes zero in, zero out.
inline TensorLayout blocks_as_planes(const TensorLayout& blocked) {
    TensorLayout v = blocked;
    const size_t last = blocked.ndim - 1;
    v[0] = blocked[0] * blocked[1];
    v.stride[0] = blocked.stride[1];
    v[1] = blocked[last];
    v.stride[1] = blocked.stride[last];
    v.ndim = last;
    return v;
}

// ConvBiasBlocked's param for a ConvolutionForward's or ConvBias's (`Conv`).
template <class Conv>
param::ConvBiasBlocked conv_bias_blocked_param(const Conv& c, size_t block, bool filter_is_const) {
    param::ConvBiasBlocked p;
    p.mode = static_cast<param::ConvBiasBlocked::Mode>(c.mode);
    p.stride = c.stride;
    p.padding = c.padding;
    p.dilation = c.dilation;
    p.group = c.group;
    if constexpr (std::is_same_v<Conv, param::ConvBias>)
        p.nonlineMode = static_cast<param::ConvBiasBlocked::NonlineMode>(c.nonlineMode);
    p.block = static_cast<uint32_t>(block);
    p.filter_is_const = filter_is_const;
    return p;
}

}  // namespace neomeg::dnn::channel_blocked
