// A Winograd filter-gradient plan split along the output channels. oneDNN's Winograd filter
// gradient keeps the transformed gradient in its scratchpad, 36 floats per (output, input) channel
// pair, with a copy per thread and one reduced: for a 512 x 512 3x3 filter that is 130 MiB, more
// than all the activations a CIFAR ResNet-18 training step saves, and it grows with the output
// channels. An output channel's gradient reads only its own diff channel, so halves, quarters, ...
// of the output channels, each planned alone and run in turn, compute the same sums in a fraction
// of the scratchpad; the extra work is transforming src once more per slice, small beside the
// products.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The most scratchpad bytes (Plan::scratchpad_in_bytes: not the buffers that reorder the call's
// plain tensors to the kernel's layout, which slices need as much of) a Winograd filter-gradient
// plan may take before it is split:
// NEOMEG_WINOGRAD_SCRATCH_MB (a positive integer; anything else warns once and counts as unset),
// 32 MiB when unset. Read on every plan, which happens once per operator and shape.
size_t winograd_filter_scratch_budget();

using FilterGradPlanner = std::function<std::unique_ptr<Plan>(std::span<const TensorLayout> in,
                                                              std::span<const TensorLayout> out)>;

// `whole`, the plan `make` made for the filter gradient in = {src, diff}, out = {grad} of an
// ungrouped 2-D convolution, or the same gradient in slices of its output channels (grad's axis
// 0; diff's axis 1, which counts `diff_granule` channels per index: 1 for a plain diff, the block
// for a channel-blocked one), each planned by `make`: the fewest slices whose scratchpad keeps
// within the budget, or the most that still run Winograd. `whole` as it is when it is not Winograd,
// keeps within the budget, or cannot be split.
std::unique_ptr<Plan> split_filter_gradient(std::unique_ptr<Plan> whole,
                                            std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out, size_t diff_granule,
                                            const FilterGradPlanner& make);

}  // namespace neomeg::dnn::x86
