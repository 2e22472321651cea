// How run_op() (run_op.cpp) runs each kind of op on eager tensors.
#pragma once

#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

// Runs a kernel-library operator on the inputs' comp node (dnn_exec.cpp); `shapes`, if not
// empty, presets every output's shape for its layout rule to check.
std::vector<Tensor> run_dnn_op(const OpDef& def, dnn::OperatorBase& op,
                               std::span<const Tensor> inputs,
                               std::span<const dnn::TensorShape> shapes = {});
// Runs a kernel-library operator on memory (`def` names it in the eager profile): deduces the
// outputs' layouts (`shapes`, if not empty, preset them), allocates them contiguous on `cn`, execs.
std::vector<Tensor> run_dnn_nd(const OpDef& def, dnn::OperatorBase& op,
                               std::span<const dnn::TensorND> inputs,
                               std::span<const dnn::TensorShape> shapes, CompNode cn);
// Runs a kernel-library operator from `inputs` into `outputs`, memory the caller allocated in
// the layouts it chose (already checked against the operator's rules); records it as run_dnn_nd.
void run_dnn_into(const OpDef& def, dnn::OperatorBase& op, std::span<const dnn::TensorND> inputs,
                  std::span<const dnn::TensorND> outputs, CompNode cn);
// Runs a generator operator (no inputs) with caller-chosen output shapes (dnn_exec.cpp).
std::vector<Tensor> run_dnn_generator(const OpDef& def, dnn::OperatorBase& op,
                                      std::span<const dnn::TensorShape> shapes, CompNode cn);
// The view of a view op's single input, or of a contiguous copy of it (view_exec.cpp).
std::vector<Tensor> run_view_op(const ViewOpDefBase& op, std::span<const Tensor> inputs);

}  // namespace neomeg::imperative
