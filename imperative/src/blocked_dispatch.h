// Eager mode's blocked dispatch (blocked_dispatch.cpp): which kernel-library ops run on
// ChannelBlock's layout, and the conversions between the two layouts.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

// Whether `def` is of a type that has a blocked twin (one switch: the hot path's only cost for
// every other op).
bool blocked_candidate(const OpDef& def);

// Runs `def` on blocked memory when the blocked dispatch takes it (its rules are in the .cpp),
// returning the outputs with blocked values where the twin's are; nullopt otherwise, having run
// nothing and materialised nothing. `out_layouts` are the plain op's deduced (contiguous) output
// layouts (with the caller's preset shapes).
std::optional<std::vector<Tensor>> run_blocked(const OpDef& def, std::span<const Tensor> inputs,
                                               std::span<const dnn::TensorLayout> out_layouts);

// The plain contiguous tensor of layout `plain` holding the value of `blocked` (ChannelBlock's
// layout, as a plain tensor of one more dim): one ChannelUnblock.
Tensor unblock(const Tensor& blocked, const dnn::TensorLayout& plain);

}  // namespace neomeg::imperative
