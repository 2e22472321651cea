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
    // result only the group reads, so that nothing outside needs an intermediate.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        OperatorNode* root = *it;
        if (taken.count(root) || !fusible(root))
            continue;
        const VarNode* out = root->outputs()[0];
        std::unordered_set<const OperatorNode*> in_group{root};
        std::vector<OperatorNode*> group{root};
        auto joins = [&](const VarNode* v) {
            OperatorNode* p = v->owner();
            if (!fusible(p) || in_group.count(p) || taken.count(p) || is_output.count(v) ||
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
            operand[node->outputs()[0]] = static_cast<uint32_t>(inputs.size() + steps.size());
            steps.push_back(std::move(step));
        }
        VarNode* result = graph.insert1(FusedElemwise(inputs.size(), std::move(steps)), inputs);
        VarNode* old = root->outputs()[0];
        result->set_name(old->name());
        graph.replace_var(old, result);
        for (VarNode*& o : outputs)
            if (o == old)
                o = result;
        for (auto g = group.rbegin(); g != group.rend(); ++g) {
            taken.insert(*g);
            graph.erase(*g);
        }
        ++fused;
    }
    return fused;
}

}  // namespace neomeg::graph
