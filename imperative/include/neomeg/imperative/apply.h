// apply(): runs one OpDef on eager tensors and records it for autograd. This is the eager hot
// path, and what Python's megengine.core._imperative_rt.apply calls:
//   run_op(op, inputs) -> DnnOpDef: deduce layouts, allocate, dnn exec (src/dnn_exec.cpp)
//                      -> ViewOpDef: a view of the input (src/view_exec.cpp)
//                      -> CustomOpDef: its own run()
//   GradKey::record -> a tape node per recording key (src/grad.cpp)
#pragma once

#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative {

// Call it qualified (imperative::apply): unqualified, argument-dependent lookup prefers
// std::apply for std::array/std::vector arguments.
std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs);
// As apply(), with every output's shape preset (run_op_with_shapes).
std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const dnn::TensorShape> output_shapes);

}  // namespace neomeg::imperative
