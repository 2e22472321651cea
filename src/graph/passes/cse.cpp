#include <unordered_map>

#include "neomeg/graph/passes.h"

namespace neomeg::graph {
namespace {

bool same_node(const OperatorNode& a, const OperatorNode& b) {
    if (a.comp_node() != b.comp_node() || a.inputs() != b.inputs() || !a.op().is_same(b.op()) ||
        a.outputs().size() != b.outputs().size())
        return false;
    // Ops without inputs (Fill, the RNGs) differ by the output shapes they were given.
    for (size_t i = 0; i < a.outputs().size(); ++i)
        if (!a.outputs()[i]->layout().eq_layout(b.outputs()[i]->layout()))
            return false;
    return true;
}

size_t node_hash(const OperatorNode& node) {
    size_t h = node.op().hash();
    for (const VarNode* in : node.inputs())
        h = h * 1000003u ^ std::hash<const VarNode*>()(in);
    return h;
}

}  // namespace

size_t eliminate_common_subexpressions(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    std::unordered_multimap<size_t, OperatorNode*> seen;
    size_t merged = 0;
    // In topological order a node's inputs are already merged, so chains of duplicates merge
    // link by link.
    for (OperatorNode* node : graph.topo_order()) {
        // Custom ops (megengine.distributed's collectives) are never merged: each execution
        // matters to the peers it communicates with, whose graphs may not hold the duplicate.
        if (node->op().kind() == OpKind::Custom)
            continue;
        size_t h = node_hash(*node);
        OperatorNode* original = nullptr;
        auto [lo, hi] = seen.equal_range(h);
        for (auto it = lo; it != hi && !original; ++it)
            if (same_node(*it->second, *node))
                original = it->second;
        if (!original) {
            seen.emplace(h, node);
            continue;
        }
        for (size_t i = 0; i < node->outputs().size(); ++i) {
            VarNode* dup = node->outputs()[i];
            VarNode* keep = original->outputs()[i];
            graph.replace_var(dup, keep);
            for (VarNode*& out : outputs)
                if (out == dup)
                    out = keep;
        }
        graph.erase(node);
        ++merged;
    }
    return merged;
}

}  // namespace neomeg::graph
