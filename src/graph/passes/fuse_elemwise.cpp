#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "../fused_elemwise.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/elemwise.h"

namespace neomeg::graph {
namespace {

// An Elemwise whose inputs and output share one dtype: the fused op computes in that dtype.
bool fusible(const OperatorNode* node) {
    if (!node || node->op().id() != ops::Elemwise::kId || node->outputs().size() != 1)
        return false;
    dnn::DType dt = node->outputs()[0]->dtype();
    return std::all_of(node->inputs().begin(), node->inputs().end(),
                       [&](const VarNode* v) { return v->dtype() == dt; });
}

}  // namespace

size_t fuse_elemwise(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    std::vector<OperatorNode*> order = graph.topo_order();
    std::unordered_map<const OperatorNode*, size_t> position;
    for (size_t i = 0; i < order.size(); ++i)
        position[order[i]] = i;
    std::unordered_set<const VarNode*> is_output(outputs.begin(), outputs.end());
    std::unordered_set<const OperatorNode*> taken;
    size_t fused = 0;

    // Readers first: each group grows from its last node (the root) up through producers whose
    // result only the group reads, so that nothing outside needs an intermediate but the caller:
    // a producer whose result is also an output joins, exported (an output of the fused node).
    // Outputs have no readers outside, so no outside node sits between two members.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        OperatorNode* root = *it;
        if (taken.count(root) || !fusible(root))
            continue;
        const VarNode* out = root->outputs()[0];
        std::unordered_set<const OperatorNode*> in_group{root};
        std::vector<OperatorNode*> group{root};
        auto joins = [&](const VarNode* v) {
            OperatorNode* p = v->owner();
            if (!fusible(p) || in_group.count(p) || taken.count(p) ||
                p->comp_node() != root->comp_node() || !v->layout().eq_shape(out->layout()) ||
                v->dtype() != out->dtype())
                return false;
            return std::all_of(v->users().begin(), v->users().end(),
                               [&](const OperatorNode* u) { return in_group.count(u) != 0; });
        };
        // Until no producer joins: one may join only once all its readers have.
        for (bool grew = true; grew;) {
            grew = false;
            for (size_t g = 0; g < group.size(); ++g)
                for (VarNode* in : group[g]->inputs())
                    if (joins(in)) {
                        in_group.insert(in->owner());
                        group.push_back(in->owner());
                        grew = true;
                    }
        }
        if (group.size() < 2)
            continue;
        std::sort(group.begin(), group.end(), [&](const OperatorNode* a, const OperatorNode* b) {
            return position.at(a) < position.at(b);
        });

        std::vector<VarNode*> inputs;
        std::unordered_map<const VarNode*, uint32_t> operand;
        std::vector<FusedElemwise::Step> steps;
        std::vector<uint32_t> exports;
        std::vector<VarNode*> exported;
        for (const OperatorNode* node : group)
            for (VarNode* in : node->inputs())
                if (!in_group.count(in->owner()) && !operand.count(in)) {
                    operand[in] = static_cast<uint32_t>(inputs.size());
                    inputs.push_back(in);
                }
        for (const OperatorNode* node : group) {
            FusedElemwise::Step step{static_cast<const ops::Elemwise&>(node->op()).param().mode,
                                     {}};
            for (VarNode* in : node->inputs())
                step.operands.push_back(operand.at(in));
            VarNode* v = node->outputs()[0];
            operand[v] = static_cast<uint32_t>(inputs.size() + steps.size());
            if (node != root && is_output.count(v)) {
                exports.push_back(static_cast<uint32_t>(steps.size()));
                exported.push_back(v);
            }
            steps.push_back(std::move(step));
        }
        const auto& results = graph.insert(
                FusedElemwise(inputs.size(), std::move(steps), std::move(exports)), inputs);
        std::vector<VarNode*> olds{root->outputs()[0]};
        olds.insert(olds.end(), exported.begin(), exported.end());
        for (size_t r = 0; r < olds.size(); ++r) {
            VarNode *old = olds[r], *result = results[r];
            result->set_name(old->name());
            graph.replace_var(old, result);
            std::replace(outputs.begin(), outputs.end(), old, result);
        }
        for (auto g = group.rbegin(); g != group.rend(); ++g) {
            taken.insert(*g);
            graph.erase(*g);
        }
        ++fused;
    }
    return fused;
}

}  // namespace neomeg::graph
