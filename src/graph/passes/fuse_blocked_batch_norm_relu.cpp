// The relu fusions of the blocked BatchNorms (BatchNormReluForwardBlocked,
// BatchNormReluBackwardBlocked), after propagate_channel_blocked: see passes.h.
#include <unordered_set>

#include "fusion_util.h"
#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;
using fusion::is_elemwise;
using fusion::rewire;
using fusion::sole_reader;

}  // namespace

size_t fuse_blocked_batch_norm_relu(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t fused_count = 0;
    // Relus (and reshapes) after their BatchNorm in the order.
    std::unordered_set<const OperatorNode*> erased;
    for (OperatorNode* node : graph.topo_order()) {
        if (erased.count(node))
            continue;
        const OpId id = node->op().id();
        if (id == ops::BatchNormForwardBlocked::kId) {
            // BatchNorm -> relu, the relu its dst's only reader, or BatchNorm -> Reshape -> relu
            // (BatchNorm1d's way back to 3-D), each its reader's only input: the fused op gives
            // the relu's value as its dst (reshaped as the relu's src was).
            VarNode* dst = node->outputs()[0];
            OperatorNode* relu = sole_reader(dst, node->comp_node(), outputs);
            OperatorNode* reshape = nullptr;
            if (relu && relu->op().id() == ops::Reshape::kId) {
                reshape = relu;
                relu = sole_reader(reshape->outputs()[0], node->comp_node(), outputs);
            }
            if (!relu || !is_elemwise(relu, Mode::RELU, 1) ||
                !relu->outputs()[0]->layout().eq_layout(relu->inputs()[0]->layout()))
                continue;
            const auto& p = static_cast<const ops::BatchNormForwardBlocked&>(node->op()).param();
            const std::vector<VarNode*>& fused =
                    graph.insert(ops::BatchNormReluForwardBlocked(p), node->inputs());
            graph.take_place_of(fused[0]->owner(), node);
            std::vector<VarNode*> new_vars = fused;
            if (reshape) {
                new_vars[0] = graph.insert1(reshape->op(), {fused[0]});
                graph.take_place_of(new_vars[0]->owner(), node);
            }
            std::vector<VarNode*> old_vars = node->outputs();
            old_vars[0] = relu->outputs()[0];
            rewire(graph, outputs, old_vars, new_vars);
            for (OperatorNode* n : {relu, reshape})
                if (n) {
                    erased.insert(n);
                    graph.erase(n);
                }
            graph.erase(node);
            ++fused_count;
        } else if (id == ops::BatchNormBackwardBlocked::kId) {
            // SWITCH_GT0(mask, grad) -> BatchNorm's backward as its diff alone, or through a
            // Reshape (BatchNorm1d's), each read only by the next: the fused op masks grad as it
            // reads it (both reshaped as the diff was).
            VarNode* diff = node->inputs()[0];
            if (node->inputs()[1] == diff || sole_reader(diff, node->comp_node(), outputs) != node)
                continue;
            OperatorNode* sw = diff->owner();
            OperatorNode* reshape = nullptr;
            if (sw && sw->op().id() == ops::Reshape::kId && sw->comp_node() == node->comp_node()) {
                reshape = sw;
                VarNode* masked = reshape->inputs()[0];
                sw = sole_reader(masked, node->comp_node(), outputs) == reshape ? masked->owner()
                                                                                : nullptr;
            }
            if (!sw || !is_elemwise(sw, Mode::SWITCH_GT0, 2) ||
                sw->comp_node() != node->comp_node())
                continue;
            VarNode *mask = sw->inputs()[0], *grad = sw->inputs()[1];
            const VarNode* masked = sw->outputs()[0];
            if (!mask->layout().eq_shape(masked->layout()) ||
                !grad->layout().eq_shape(masked->layout()) || mask->dtype() != diff->dtype() ||
                grad->dtype() != diff->dtype())
                continue;
            if (reshape) {
                grad = graph.insert1(reshape->op(), {grad});
                mask = graph.insert1(reshape->op(), {mask});
                graph.take_place_of(grad->owner(), node);
                graph.take_place_of(mask->owner(), node);
            }
            const auto& p = static_cast<const ops::BatchNormBackwardBlocked&>(node->op()).param();
            const std::vector<VarNode*>& in = node->inputs();
            const std::vector<VarNode*>& fused = graph.insert(
                    ops::BatchNormReluBackwardBlocked(p), {grad, in[1], in[2], in[3], in[4], mask});
            graph.take_place_of(fused[0]->owner(), node);
            rewire(graph, outputs, node->outputs(), fused);
            graph.erase(node);
            if (reshape)
                graph.erase(reshape);
            graph.erase(sw);
            ++fused_count;
        }
    }
    return fused_count;
}

}  // namespace neomeg::graph
