// The residual add + relu fusions of the blocked BatchNorms (BatchNormAddReluForwardBlocked,
// BatchNormAddReluBackwardBlocked), after propagate_channel_blocked: see passes.h.
#include <unordered_set>

#include "fusion_util.h"
#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;
using fusion::is_elemwise;
using fusion::rewire;
using fusion::sole_reader;

// `v` has `like`'s shape and dtype.
bool same_shape_and_dtype(const VarNode* v, const VarNode* like) {
    return v->layout().eq_shape(like->layout()) && v->dtype() == like->dtype();
}

// ADD(dst, z) -> RELU, after a BatchNormForwardBlocked whose dst only the ADD reads and whose sum
// only the RELU reads: the fused node gives the RELU's value. Returns the nodes it erased.
std::vector<OperatorNode*> fuse_forward(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                                        OperatorNode* bn) {
    VarNode* dst = bn->outputs()[0];
    OperatorNode* add = sole_reader(dst, bn->comp_node(), outputs);
    if (!add || !is_elemwise(add, Mode::ADD, 2))
        return {};
    VarNode* z = add->inputs()[add->inputs()[0] == dst ? 1 : 0];
    OperatorNode* relu = sole_reader(add->outputs()[0], bn->comp_node(), outputs);
    if (z == dst || !same_shape_and_dtype(z, dst) ||
        !add->outputs()[0]->layout().eq_layout(dst->layout()) || !relu ||
        !is_elemwise(relu, Mode::RELU, 1) || !relu->outputs()[0]->layout().eq_layout(dst->layout()))
        return {};
    const auto& p = static_cast<const ops::BatchNormForwardBlocked&>(bn->op()).param();
    std::vector<VarNode*> in = bn->inputs();
    in.push_back(z);
    const std::vector<VarNode*>& fused = graph.insert(ops::BatchNormAddReluForwardBlocked(p), in);
    // Where the relu ran: z may come after the BatchNorm.
    graph.take_place_of(fused[0]->owner(), relu);
    std::vector<VarNode*> old_vars = bn->outputs();
    old_vars[0] = relu->outputs()[0];
    rewire(graph, outputs, old_vars, fused);
    graph.erase(relu);
    graph.erase(add);
    graph.erase(bn);
    return {relu, add};
}

// A BatchNormBackwardBlocked whose diff is SWITCH_GT0(mask, ADD(a, b)), the ADD read only by the
// SWITCH_GT0 (which others may read: the residual branch): the fused node computes the masked sum
// as an output of its own, which the SWITCH_GT0's other readers read.
bool fuse_backward(ComputingGraph& graph, std::vector<VarNode*>& outputs, OperatorNode* bn) {
    VarNode* diff = bn->inputs()[0];
    OperatorNode* sw = diff->owner();
    if (bn->inputs()[1] == diff || !sw || sw->comp_node() != bn->comp_node() ||
        !is_elemwise(sw, Mode::SWITCH_GT0, 2))
        return false;
    VarNode *mask = sw->inputs()[0], *sum = sw->inputs()[1];
    OperatorNode* add = sum->owner();
    if (!add || sole_reader(sum, bn->comp_node(), outputs) != sw ||
        !is_elemwise(add, Mode::ADD, 2) || !same_shape_and_dtype(mask, diff) ||
        !same_shape_and_dtype(sum, diff))
        return false;
    VarNode *a = add->inputs()[0], *b = add->inputs()[1];
    if (!same_shape_and_dtype(a, diff) || !same_shape_and_dtype(b, diff))
        return false;
    const auto& p = static_cast<const ops::BatchNormBackwardBlocked&>(bn->op()).param();
    const std::vector<VarNode*>& in = bn->inputs();
    const std::vector<VarNode*>& fused = graph.insert(ops::BatchNormAddReluBackwardBlocked(p),
                                                      {a, b, in[1], in[2], in[3], in[4], mask});
    // Where the mask ran: the residual branch's readers of it may come before this BatchNorm.
    graph.take_place_of(fused[0]->owner(), sw);
    std::vector<VarNode*> old_vars = bn->outputs();
    old_vars.push_back(diff);
    rewire(graph, outputs, old_vars, fused);
    graph.erase(bn);
    graph.erase(sw);
    graph.erase(add);
    return true;
}

}  // namespace

size_t fuse_blocked_batch_norm_add_relu(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t fused_count = 0;
    // The forward's ADD and RELU come after their BatchNorm in the order.
    std::unordered_set<const OperatorNode*> erased;
    for (OperatorNode* node : graph.topo_order()) {
        if (erased.count(node))
            continue;
        if (node->op().id() == ops::BatchNormForwardBlocked::kId) {
            const std::vector<OperatorNode*> gone = fuse_forward(graph, outputs, node);
            erased.insert(gone.begin(), gone.end());
            fused_count += !gone.empty();
        } else if (node->op().id() == ops::BatchNormBackwardBlocked::kId) {
            fused_count += fuse_backward(graph, outputs, node);
        }
    }
    return fused_count;
}

}  // namespace neomeg::graph
