#include <algorithm>

#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;

bool is_elemwise(const OperatorNode* node, Mode mode) {
    return node->op().id() == ops::Elemwise::kId &&
           static_cast<const ops::Elemwise&>(node->op()).param().mode == mode;
}

// A RELU node reading `x` alone on `cn`, giving x's layout.
VarNode* relu_of(const VarNode* x, CompNode cn) {
    for (OperatorNode* user : x->users())
        if (is_elemwise(user, Mode::RELU) && user->inputs().size() == 1 &&
            user->comp_node() == cn && user->outputs()[0]->layout().eq_layout(x->layout()))
            return user->outputs()[0];
    return nullptr;
}

}  // namespace

size_t mask_relu_grads_by_output(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t rewritten = 0;
    for (OperatorNode* node : graph.topo_order()) {
        if (!is_elemwise(node, Mode::SWITCH_GT0) || node->inputs().size() != 2)
            continue;
        VarNode *x = node->inputs()[0], *grad = node->inputs()[1];
        VarNode* relu = relu_of(x, node->comp_node());
        // relu(x) > 0 exactly where x > 0 (a NaN is neither); the RELU reads only x, so it
        // does not depend on this node.
        if (!relu || relu == grad || !relu->layout().eq_shape(x->layout()))
            continue;
        InsertOptions opt;
        opt.comp_node = node->comp_node();
        VarNode* masked = graph.insert1(node->op(), {relu, grad}, opt);
        VarNode* old = node->outputs()[0];
        masked->set_name(old->name());
        graph.take_place_of(masked->owner(), node);
        graph.replace_var(old, masked);
        std::replace(outputs.begin(), outputs.end(), old, masked);
        graph.erase(node);
        ++rewritten;
    }
    return rewritten;
}

}  // namespace neomeg::graph
