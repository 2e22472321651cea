// ComputingGraph::copy: what some outputs need, as a new graph; ComputingGraph::compile: copy
// it, optimize the copy, plan and wrap it.
#include <algorithm>
#include <unordered_map>

#include "neomeg/graph/executable.h"
#include "neomeg/graph/graph.h"
#include "neomeg/graph/passes.h"

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
        std::vector<dnn::TensorLayout> layouts;
        for (VarNode* out : node->outputs())
            layouts.push_back(out->layout());
        // A fresh op: the copy's kernels and plans are its own.
        OperatorNode* n = copy->insert_node(node->op().clone(), inputs, node->comp_node(), layouts);
        for (size_t i = 0; i < layouts.size(); ++i) {
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
    // Before elemwise fusion, which would take the bias add and the activation.
    if (options.fuse_conv_bias)
        fuse_conv_bias(*copy, outs, /*require_own_kernel=*/true);
    if (options.fuse_elemwise)
        fuse_elemwise(*copy, outs);
    eliminate_dead_code(*copy, outs);

    std::unique_ptr<Executable> exe(new Executable());
    exe->build(std::move(copy), std::move(outs), options.reuse_inplace);
    // The caller's names, whatever var a pass put in an output's place.
    for (size_t i = 0; i < outputs.size(); ++i)
        exe->m_outputs[i].name = outputs[i]->name();
    return exe;
}

}  // namespace neomeg::graph
