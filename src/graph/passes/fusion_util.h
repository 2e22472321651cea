// Matching and rewiring helpers of the blocked BatchNorm fusions (fuse_blocked_batch_norm_relu.cpp,
// fuse_blocked_batch_norm_add_relu.cpp).
#pragma once

#include <algorithm>
#include <vector>

#include "neomeg/graph/graph.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph::fusion {

inline bool is_elemwise(const OperatorNode* node, dnn::param::Elemwise::Mode mode, size_t arity) {
    return node->op().id() == ops::Elemwise::kId &&
           static_cast<const ops::Elemwise&>(node->op()).param().mode == mode &&
           node->inputs().size() == arity;
}

// The one node that reads `v`, on `cn`, when `v` is not a graph output; else nullptr.
inline OperatorNode* sole_reader(const VarNode* v, CompNode cn,
                                 const std::vector<VarNode*>& outputs) {
    const auto& users = v->users();
    if (users.size() != 1 || users[0]->comp_node() != cn ||
        std::find(outputs.begin(), outputs.end(), v) != outputs.end())
        return nullptr;
    return users[0];
}

// Readers of each old var read the new one at its index instead, also in `outputs`.
inline void rewire(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                   const std::vector<VarNode*>& old_vars, const std::vector<VarNode*>& new_vars) {
    for (size_t i = 0; i < old_vars.size(); ++i) {
        new_vars[i]->set_name(old_vars[i]->name());
        graph.replace_var(old_vars[i], new_vars[i]);
        std::replace(outputs.begin(), outputs.end(), old_vars[i], new_vars[i]);
    }
}

}  // namespace neomeg::graph::fusion
