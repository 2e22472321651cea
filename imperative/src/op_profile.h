// NEOMEG_EAGER_PROFILE=1: eager mode times every kernel-library call (its workspace and outputs
// allocated, the kernel run) after the first of each (op, input layouts), which plans the kernel,
// and prints to stderr at exit, per kind of op (the op's name; an Elemwise's mode too), the total
// time, the calls, and the sum over calls of their (op, layouts)'s fastest call: the steadier
// figure on a shared machine. It is the eager side of NEOMEG_GRAPH_PROFILE
// (graph/step_profile.h), so that one model's eager and traced steps compare op by op.
#pragma once

#include <chrono>
#include <span>

#include "neomeg/dnn/tensor.h"
#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

// Whether NEOMEG_EAGER_PROFILE is set to something other than "0" (read once per process).
bool eager_profile_enabled();

// Adds one call of `def` on inputs of `layouts` that took `t`.
void eager_profile_add(const OpDef& def, std::span<const dnn::TensorLayout> layouts,
                       std::chrono::nanoseconds t);

}  // namespace neomeg::imperative
