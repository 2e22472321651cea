// OpDef: an operator with its params, the unit that the eager runtime (imperative/), the
// computing graph (src/graph) and the model file share. One class per operator, generated from
// dnn/ops/defs and src/ops/defs by src/opgen/emit_op_defs.py (<neomeg/op/defs/<group>.h>, all of
// them: <neomeg/op/op_defs.h>):
//   DnnOpDef<dnn::Op>      kernel-library operators: run a dnn kernel (dnn_op_def.h);
//   ViewOpDef<Param, Id>   layout operators: a view of the input eagerly, a copy in a graph
//                          (view_op_def.h).
// This layer knows nothing of eager tensors: it infers output layouts and runs an op on memory
// its caller allocated. imperative/ adds eager tensors, apply() and autograd on top.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neomeg/core/comp_node.h"
#include "neomeg/dnn/tensor.h"
#include "neomeg/op/op_id.h"
#include "neomeg/op/param_fields.h"

namespace neomeg {

enum class OpKind : uint8_t {
    Dnn,     // a DnnOpDef: a kernel-library operator
    View,    // a ViewOpDef: a layout change
    Custom,  // outside the registry
};

class OpDef {
public:
    virtual ~OpDef() = default;

    virtual OpId id() const = 0;
    virtual const char* name() const { return op_id_name(id()); }
    OpKind kind() const;  // op_ids.cpp (generated): by the id's range
    virtual size_t hash() const = 0;
    virtual bool is_same(const OpDef& rhs) const = 0;  // same operator and equal params
    virtual std::string to_string() const = 0;         // "Elemwise(mode=ADD)"
    // A copy with the same params and none of this op's cached kernel state.
    virtual std::shared_ptr<OpDef> clone() const = 0;

    // The params as named fields in definition order: what a model file stores.
    virtual std::vector<ParamField> param_fields() const = 0;
    // Sets the field `name` from a value of the field's own type; ParamError for an unknown
    // field, a value of another type or an enum value out of range.
    virtual void set_param_field(std::string_view name, const ParamValue& value) = 0;
    // The seed of an op keyed by one (the random number generators, DropoutForward), which
    // draws other numbers for each seed: graphs never fold it into a constant, and a traced
    // graph's replays give it new seeds (Executable::set_seed). Nullopt for other ops.
    std::optional<uint64_t> seed() const {
        for (const auto& f : param_fields())
            if (f.name == "seed")
                if (const auto* v = std::get_if<uint64_t>(&f.value))
                    return *v;
        return std::nullopt;
    }

    // Output layouts (contiguous) for inputs of these layouts on `cn`, without running anything.
    // `output_shapes` presets every output's shape (empty: none) for ops whose inputs do not fix
    // it (generators such as Fill, a strided convolution's input gradient); the layout rule checks
    // a preset. Bad inputs throw ShapeError/DTypeError/ParamError naming the op and its params.
    virtual std::vector<dnn::TensorLayout> infer_layouts(
            CompNode cn, std::span<const dnn::TensorLayout> inputs,
            std::span<const dnn::TensorShape> output_shapes) const = 0;
    // Scratch bytes exec() needs for these layouts.
    virtual size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                                      std::span<const dnn::TensorLayout> outputs) const = 0;
    // Runs the op on `cn` into outputs the caller allocated, with the layouts infer_layouts
    // gave for these inputs (not re-checked: the caller inferred them), and a workspace of at
    // least workspace_in_bytes(), 64-byte aligned. One op object must not run on two threads at
    // once: it caches kernel state.
    virtual void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
                      std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const = 0;
};

}  // namespace neomeg
