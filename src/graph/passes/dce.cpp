#include <algorithm>
#include <unordered_set>

#include "neomeg/graph/passes.h"

namespace neomeg::graph {

size_t eliminate_dead_code(ComputingGraph& graph, std::span<VarNode* const> outputs) {
    std::vector<OperatorNode*> needed_order = graph.topo_order(outputs);
    std::unordered_set<const OperatorNode*> needed(needed_order.begin(), needed_order.end());
    std::vector<OperatorNode*> all = graph.topo_order();
    size_t erased = 0;
    // Readers first: a dead node's outputs are read only by dead nodes.
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        if (!needed.count(*it)) {
            graph.erase(*it);
            ++erased;
        }
    }
    std::unordered_set<const VarNode*> kept(outputs.begin(), outputs.end());
    for (VarNode* v : graph.vars()) {
        if (v->kind() == VarNode::Kind::Const && v->users().empty() && !kept.count(v)) {
            graph.erase(v);
            ++erased;
        }
    }
    return erased;
}

}  // namespace neomeg::graph
