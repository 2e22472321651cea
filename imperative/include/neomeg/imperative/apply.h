// apply(): runs one OpDef on eager tensors. This is the eager hot path:
//   layouts -> dnn deduce_layout -> allocate outputs on the inputs' comp node -> dnn exec.
// Python's megengine.core._imperative_rt.apply calls it directly.
#pragma once

#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative {

// Runs `op` on `inputs`, which must all live on one comp node. Errors from the kernel library
// (ShapeError, DTypeError, ...) propagate with the op's name and params in their message.
std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs);

// Runs a generator op (Fill, Eye, the RNGs, ...) whose output shapes the caller chooses.
std::vector<Tensor> apply_generator(const OpDef& op, std::span<const dnn::TensorShape> shapes,
                                    CompNode cn);

}  // namespace neomeg::imperative
