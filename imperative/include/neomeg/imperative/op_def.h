// The eager runtime's view of the operator registry (src/include/neomeg/op): every registry op
// runs on eager tensors through run_op(), and ops outside the registry that exist only eagerly
// (a Python autodiff.Function) derive from CustomOpDef. apply() (apply.h) runs any OpDef and
// records it for autograd.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "neomeg/imperative/tensor.h"
#include "neomeg/op/dnn_op_def.h"
#include "neomeg/op/view_op_def.h"

// The registry's classes (neomeg/op/defs/<group>.h) under the eager runtime's name:
// imperative::ops::Elemwise is neomeg::ops::Elemwise.
namespace neomeg::ops {}
namespace neomeg::imperative {
namespace ops = ::neomeg::ops;
}  // namespace neomeg::imperative

namespace neomeg::imperative {

using ::neomeg::kCustomOpId;
using ::neomeg::OpDef;
using ::neomeg::OpId;
using ::neomeg::OpKind;

struct GradRule;  // grad.h

// An op that runs only eagerly: it computes its outputs itself and brings its own backward rule.
// A graph cannot hold one (its layout and exec hooks throw NotSupportedError).
class CustomOpDef : public OpDef {
public:
    OpId id() const override { return kCustomOpId; }
    // Computes the outputs; no autograd (apply() adds that).
    virtual std::vector<Tensor> run(std::span<const Tensor> inputs) const = 0;
    // The backward rule autograd records this op with; nullptr: not differentiable.
    virtual const GradRule* grad_rule() const { return nullptr; }
    // True for a custom op that overrides infer_layouts, workspace_in_bytes and exec, which a
    // traced graph can then hold (megengine.distributed's all-reduce); the others end a
    // recording.
    virtual bool graph_capable() const { return false; }

    std::vector<ParamField> param_fields() const override { return {}; }
    void set_param_field(std::string_view name, const ParamValue& value) override;
    std::vector<dnn::TensorLayout> infer_layouts(
            CompNode cn, std::span<const dnn::TensorLayout> inputs,
            std::span<const dnn::TensorShape> output_shapes) const override;
    size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                              std::span<const dnn::TensorLayout> outputs) const override;
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const override;
};

// Computes op's outputs on the inputs' comp node; no autograd (apply() adds that). A dnn op
// allocates its outputs and runs its kernel (src/dnn_exec.cpp); a view op returns a view of its
// input, or of a contiguous copy when the strides cannot express it (src/view_exec.cpp).
std::vector<Tensor> run_op(const OpDef& op, std::span<const Tensor> inputs);
// As run_op(), with every output's shape preset by the caller, for operators whose layout rule
// accepts a preset (ConvolutionBackwardData/Filter: several input shapes give one forward output,
// and a backward rule must reproduce the forward input's). Dnn ops only.
std::vector<Tensor> run_op_with_shapes(const OpDef& op, std::span<const Tensor> inputs,
                                       std::span<const dnn::TensorShape> shapes);
// Runs an op without inputs (Fill, Eye, the RNGs) with caller-chosen output shapes on `cn`.
std::vector<Tensor> run_generator(const OpDef& op, std::span<const dnn::TensorShape> shapes,
                                  CompNode cn);

}  // namespace neomeg::imperative
