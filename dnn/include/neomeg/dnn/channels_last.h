// Channels-last tensors: a 4-D (N, C, H, W) or 5-D (N, C, D, H, W) tensor keeps its logical NCHW
// shape while its memory is NHWC (NDHWC): stride 1 for C, then W, H (D), N outermost, as
// PyTorch's channels_last. No new layout concept: a strided TensorLayout, which every kernel
// already takes; the x86 kernels describe it to oneDNN as nhwc. The eager runtime gives an
// operator's output this layout where its definition says so (layout_follows.h).
#pragma once

#include <span>

#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/op_type.h"

namespace neomeg::dnn {

// The channels-last layout of a 4-D or 5-D shape (ShapeError for another rank).
TensorLayout channels_last_layout(const TensorShape& shape, DType dtype);

// Whether `l` has exactly channels_last_layout's strides, and they differ from the contiguous
// ones (so an (N, C, 1, 1) tensor is channels-last only when made so, and (N, 1, 1, 1) never is).
// Exact strides make the format a fact of the layout that views keep or lose as they should.
bool is_channels_last(const TensorLayout& l);

// The eager runtime's rule: each output whose definition names a source (layout_follows) gets
// the channels-last layout of its shape when that source is channels-last (a variadic source:
// when any input of the output's shape that is not a broadcast view is; a row-major operand
// beside it does not change that, and the x86 loops copy it into dst's order). `outputs` hold
// deduce_layout's contiguous layouts; others are left as they are.
void apply_layout_follows(OpType type, std::span<const TensorLayout> inputs,
                          std::span<TensorLayout> outputs);

}  // namespace neomeg::dnn
