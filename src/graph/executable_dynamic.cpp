// Executable's steps of dynamic shape (VarNode::shape_dynamic): their output shapes depend on
// values computed in the same run (CondTake's count read by TakePrefix, and whatever reads
// that), so each run infers them from the inputs' actual layouts and the shape input's value
// (read back from the device on a GPU node: read_shape_value), then allocates the outputs and the
// workspace from the comp node's allocator: the arena's plan cannot hold a buffer whose size it
// does not know.
#include "neomeg/graph/executable.h"
#include "neomeg/graph/graph.h"
#include "neomeg/graph/value_infer.h"
#include "rethrow.h"

namespace neomeg::graph {

const dnn::TensorLayout& Executable::var_layout(const VarSlot& v) const {
    if (v.source == VarSlot::Source::Dynamic)
        return m_dynamic_values[v.index].layout();
    if (v.source == VarSlot::Source::Output && v.dynamic)
        return m_output_values[v.index].layout();
    return v.layout;
}

size_t Executable::num_dynamic_steps() const {
    size_t n = 0;
    for (const Step& s : m_steps)
        n += s.dynamic;
    return n;
}

void Executable::run_dynamic_step(Step& step) {
    const OpDef& op = step.op();
    try {
        std::vector<dnn::TensorLayout> in_layouts;
        for (size_t i = 0; i < step.inputs.size(); ++i) {
            const VarSlot& v = m_vars[step.inputs[i]];
            in_layouts.push_back(var_layout(v));
            step.in_nd[i] = var_nd(v, in_layouts.back());
        }
        std::vector<dnn::TensorShape> presets;
        if (auto vi = shape_value_input(op)) {
            // On a GPU this waits for the stream: the value's producer must have finished.
            std::vector<int32_t> value = read_shape_value(step.comp_node, step.in_nd.at(*vi));
            presets = shapes_from_value(op, in_layouts, value);
        }
        auto out_layouts = op.infer_layouts(step.comp_node, in_layouts, presets);
        for (size_t i = 0; i < step.outputs.size(); ++i) {
            const VarSlot& v = m_vars[step.outputs[i]];
            DeviceTensor t =
                    DeviceTensor::empty(out_layouts[i], out_layouts[i].dtype, step.comp_node);
            step.out_nd[i] = t.as_nd();
            (v.source == VarSlot::Source::Dynamic ? m_dynamic_values : m_output_values)[v.index] =
                    std::move(t);
        }
        size_t ws_size = op.workspace_in_bytes(step.comp_node, in_layouts, out_layouts);
        DeviceTensor ws;
        if (ws_size)
            ws = DeviceTensor::empty({ws_size}, dnn::dtype::Uint8, step.comp_node);
        op.exec(step.comp_node, step.in_nd, step.out_nd,
                {ws_size ? ws.raw_ptr() : nullptr, ws_size});
        // The workspace is freed on return: the step must be done with it.
        if (ws_size)
            step.comp_node.sync();
    } catch (const dnn::Error&) {
        rethrow_with_context(dnn::str_cat("Executable: ", op.to_string(), " (dynamic shapes): "));
    }
}

}  // namespace neomeg::graph
