#include <algorithm>

#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;

bool is_switch_gt0(const OperatorNode* node) {
    return node->op().id() == ops::Elemwise::kId &&
           static_cast<const ops::Elemwise&>(node->op()).param().mode == Mode::SWITCH_GT0 &&
           node->inputs().size() == 2;
}

// The MAX PoolingBackward that gives `grad` and that only `reader` reads, whose dst input is
// the PoolingForward of its own src with the same param (the backward recomputes the maxima from
// src and only checks dst's shape: the rewrite needs dst to hold them); nullptr otherwise.
OperatorNode* max_pool_backward_of(const VarNode* grad, const OperatorNode* reader,
                                   const std::vector<VarNode*>& outputs) {
    OperatorNode* bwd = grad->owner();
    if (!bwd || bwd->op().id() != ops::PoolingBackward::kId || grad->users().size() != 1 ||
        grad->users()[0] != reader || bwd->comp_node() != reader->comp_node() ||
        std::find(outputs.begin(), outputs.end(), grad) != outputs.end())
        return nullptr;
    const auto& p = static_cast<const ops::PoolingBackward&>(bwd->op()).param();
    const OperatorNode* fwd = bwd->inputs()[1]->owner();
    if (p.mode != dnn::param::Pooling::Mode::MAX || !fwd ||
        fwd->op().id() != ops::PoolingForward::kId ||
        !(static_cast<const ops::PoolingForward&>(fwd->op()).param() == p) ||
        fwd->inputs()[0] != bwd->inputs()[0])
        return nullptr;
    return bwd;
}

}  // namespace

size_t mask_before_max_pool_grads(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t rewritten = 0;
    for (OperatorNode* node : graph.topo_order()) {
        if (!is_switch_gt0(node))
            continue;
        OperatorNode* bwd = max_pool_backward_of(node->inputs()[1], node, outputs);
        if (!bwd || node->inputs()[0] != bwd->inputs()[0])
            continue;
        VarNode *src = bwd->inputs()[0], *dst = bwd->inputs()[1], *diff = bwd->inputs()[2];
        if (dst->dtype() != src->dtype() || diff->dtype() != node->outputs()[0]->dtype())
            continue;
        // Each window's gradient goes to an element equal to the window's maximum (a NaN where
        // the window holds one), so the element's mask is the maximum's: masking the window's
        // gradient instead gives every element the same terms, zeros where the mask is off.
        InsertOptions opt;
        opt.comp_node = node->comp_node();
        VarNode* masked_diff = graph.insert1(node->op(), {dst, diff}, opt);
        graph.take_place_of(masked_diff->owner(), bwd);
        VarNode* grad = graph.insert1(bwd->op(), {src, dst, masked_diff}, opt);
        graph.take_place_of(grad->owner(), bwd);
        VarNode* old = node->outputs()[0];
        grad->set_name(old->name());
        graph.replace_var(old, grad);
        std::replace(outputs.begin(), outputs.end(), old, grad);
        graph.erase(node);
        graph.erase(bwd);
        ++rewritten;
    }
    return rewritten;
}

}  // namespace neomeg::graph
