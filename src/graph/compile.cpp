// ComputingGraph::copy: what some outputs need, as a new graph; ComputingGraph::compile: copy
// it, optimize the copy, plan and wrap it.
#include <algorithm>
#include <unordered_map>

#include "neomeg/graph/executable.h"
#include "neomeg/graph/graph.h"
#include "neomeg/graph/passes.h"
#include "neomeg/graph/value_infer.h"

namespace neomeg::graph {

std::unique_ptr<ComputingGraph> ComputingGraph::copy(std::vector<VarNode*>& outputs) const {
    std::vector<OperatorNode*> order = topo_order(outputs);  // checks every output

    // The inputs and constants read, in creation order, then the nodes in topological order.
    std::vector<VarNode*> leaves;
    auto add_leaf = [&](VarNode* v) {
        if (v->kind() != VarNode::Kind::Computed)
            leaves.push_back(v);
    };
    for (OperatorNode* node : order)
        std::for_each(node->inputs().begin(), node->inputs().end(), add_leaf);
    std::for_each(outputs.begin(), outputs.end(), add_leaf);
    std::sort(leaves.begin(), leaves.end(),
              [](const VarNode* a, const VarNode* b) { return a->id() < b->id(); });
    leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());

    auto copy = std::make_unique<ComputingGraph>();
    std::unordered_map<const VarNode*, VarNode*> map;
    for (VarNode* v : leaves)
        map[v] = v->kind() == VarNode::Kind::Input
                         ? copy->input(v->name(), v->shape(), v->dtype(), v->comp_node())
                         : copy->constant(v->value(), v->name());
    for (OperatorNode* node : order) {
        std::vector<VarNode*> inputs;
        for (VarNode* in : node->inputs())
            inputs.push_back(map.at(in));
        // Inferred again (value_infer.h): an input that became a constant can make a dynamic
        // shape static. Dnn ops keep their output shapes as presets (their rules check them;
        // a value-shaped op's stand-in stays the one it had, unless its value is known now);
        // view ops take none, and other ops' dynamic stand-ins are inferred again. An output
        // that was dynamic only because an input was (a ReshapeTo whose target a frozen
        // external now fixes, and everything after it) had its recorded shape as stand-in: the
        // shape eager mode gave, which some ops cannot infer again without it (a strided
        // convolution's input gradient: 13 or 14 rows from 7), so it stays a preset once the
        // inputs are static again.
        std::vector<dnn::TensorShape> presets;
        bool dynamic = false;
        for (VarNode* out : node->outputs()) {
            presets.push_back(out->shape());
            dynamic |= out->shape_dynamic();
        }
        auto any_dynamic = [](const auto& vars) {
            return std::any_of(vars.begin(), vars.end(),
                               [](const VarNode* v) { return v->shape_dynamic(); });
        };
        const bool data_dependent = dynamic && !any_dynamic(node->inputs());
        const bool still_dynamic = dynamic && (data_dependent || any_dynamic(inputs));
        bool value_shaped = shape_value_input(node->op()).has_value();
        if (!value_shaped && (still_dynamic || node->op().kind() != OpKind::Dnn))
            presets.clear();
        // A fresh op: the copy's kernels and plans are its own.
        OperatorNode* n = copy->insert_inferred(node->op().clone(), inputs, node->comp_node(),
                                                std::move(presets));
        for (size_t i = 0; i < node->outputs().size(); ++i) {
            n->outputs()[i]->set_name(node->outputs()[i]->name());
            map[node->outputs()[i]] = n->outputs()[i];
        }
    }
    for (VarNode*& v : outputs)
        v = map.at(v);
    return copy;
}

std::unique_ptr<Executable> ComputingGraph::compile(std::span<VarNode* const> outputs,
                                                    const CompileOptions& options) const {
    NM_THROW_IF(outputs.empty(), ParamError, "compile: no outputs");
    std::vector<VarNode*> outs(outputs.begin(), outputs.end());
    auto copy = this->copy(outs);

    if (options.fold_constants)
        fold_constants(*copy, outs);
    if (options.eliminate_common_subexpr)
        eliminate_common_subexpressions(*copy, outs);
    // Before the fusions, which would take the Elemwise ops it folds.
    if (options.fold_batch_norm)
        fold_batch_norm(*copy, outs);
    // Before the fusions: it frees the activation's input for ConvBias and in-place reuse.
    if (options.mask_relu_grads)
        mask_relu_grads_by_output(*copy, outs);
    // After the relu masks read the relus' outputs (a max pooling's src), before the layout pass.
    if (options.mask_before_pool_grads)
        mask_before_max_pool_grads(*copy, outs);
    // Before elemwise fusion, which would take the bias add and the activation.
    if (options.fuse_conv_bias)
        fuse_conv_bias(*copy, outs, /*require_own_kernel=*/true);
    // After the convolution fusion (it takes ConvBias whole) and before elementwise fusion,
    // which then fuses the elementwise ops left between blocked convolutions on blocked tensors.
    if (options.propagate_layouts) {
        propagate_channel_blocked(*copy, outs);
        // The residual fusions first: a relu's mask over a gradients' sum goes into the backward
        // with the sum, where the relu fusion would take the mask alone.
        fuse_blocked_batch_norm_add_relu(*copy, outs);
        fuse_blocked_batch_norm_relu(*copy, outs);
    }
    if (options.fuse_elemwise)
        fuse_elemwise(*copy, outs);
    if (options.reduce_inner_first)
        reduce_inner_axes_first(*copy, outs);
    eliminate_dead_code(*copy, outs);

    std::unique_ptr<Executable> exe(new Executable());
    exe->build(std::move(copy), std::move(outs), options.reuse_inplace);
    // The caller's names, whatever var a pass put in an output's place.
    for (size_t i = 0; i < outputs.size(); ++i)
        exe->m_outputs[i].name = outputs[i]->name();
    return exe;
}

}  // namespace neomeg::graph
