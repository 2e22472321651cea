#include <algorithm>
#include <unordered_set>

#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/views.h"

namespace neomeg::graph {
namespace {

using RMode = dnn::param::Reduce::Mode;

bool is_sum(const OperatorNode* node) {
    return node->op().id() == ops::Reduce::kId && node->inputs().size() == 1 &&
           node->outputs().size() == 1 &&
           static_cast<const ops::Reduce&>(node->op()).param().mode == RMode::SUM;
}

// The axis a Reduce of an ndim-dimensional value reduces, counted from the front.
size_t axis_of(const OperatorNode* node, size_t ndim) {
    int32_t a = static_cast<const ops::Reduce&>(node->op()).param().axis;
    return static_cast<size_t>(a < 0 ? a + static_cast<int32_t>(ndim) : a);
}

ops::Reshape reshape_to(const dnn::TensorShape& shape) {
    param::Reshape p;
    for (size_t d = 0; d < shape.ndim; ++d)
        p.shape.push_back(static_cast<int32_t>(shape[d]));
    return ops::Reshape(p);
}

ops::Reduce sum_over(size_t axis) {
    dnn::param::Reduce p;
    p.mode = RMode::SUM;
    p.axis = static_cast<int32_t>(axis);
    return ops::Reduce(p);
}

}  // namespace

size_t reduce_inner_axes_first(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    std::unordered_set<const VarNode*> is_output(outputs.begin(), outputs.end());
    std::unordered_set<const OperatorNode*> seen;
    size_t rewritten = 0;
    for (OperatorNode* first : graph.topo_order()) {
        if (seen.count(first) || !is_sum(first))
            continue;
        // The chain: each Reduce read only by the next, on one comp node.
        std::vector<OperatorNode*> chain{first};
        VarNode* last = first->outputs()[0];
        while (last->users().size() == 1 && !is_output.count(last) && is_sum(last->users()[0]) &&
               last->users()[0]->comp_node() == first->comp_node()) {
            chain.push_back(last->users()[0]);
            last = chain.back()->outputs()[0];
        }
        seen.insert(chain.begin(), chain.end());
        VarNode* x = first->inputs()[0];
        if (x->shape_dynamic() || last->shape_dynamic() || !x->layout().is_contiguous() ||
            x->dtype() != dnn::dtype::Float32)  // float16's intermediates would round far more
            continue;
        const dnn::TensorShape& xs = x->shape();
        const size_t nd = xs.ndim;
        // Reduce keeps the reduced axis (as 1): every var of the chain has x's ndim.
        std::vector<bool> reduced(nd, false);
        bool keeps_ndim = true;
        for (OperatorNode* r : chain) {
            keeps_ndim = keeps_ndim && r->outputs()[0]->shape().ndim == nd;
            size_t a = axis_of(r, nd);
            if (a < nd)
                reduced[a] = true;
        }
        if (!keeps_ndim || nd < 2)
            continue;
        // The trailing axes that are reduced (or of size 1): one contiguous run per outer index,
        // which the inner-first form sums as one row.
        size_t k = nd;
        while (k > 0 && (reduced[k - 1] || xs[k - 1] == 1))
            --k;
        size_t run = 1, outer_reduced = 0;
        for (size_t d = k; d < nd; ++d)
            run *= xs[d];
        for (size_t d = 0; d < k; ++d)
            outer_reduced += reduced[d] && xs[d] != 1;
        // Worth it where the chain sums a leading axis first (strided rows of the whole
        // value) and a trailing run of several elements remains, or sums the run in pieces.
        const bool sums_outer_first = axis_of(first, nd) < k;
        const size_t trailing_steps = chain.size() - outer_reduced;
        if (run < 2 || k == 0 || (!sums_outer_first && trailing_steps < 2))
            continue;

        InsertOptions opt;
        opt.comp_node = first->comp_node();
        dnn::TensorShape merged;
        merged.ndim = k + 1;
        for (size_t d = 0; d < k; ++d)
            merged[d] = xs[d];
        merged[k] = run;
        // Where the chain's first Reduce ran, so that x dies as early as before.
        auto add = [&](const OpDef& op, VarNode* in) {
            VarNode* out = graph.insert1(op, {in}, opt);
            graph.take_place_of(out->owner(), first);
            return out;
        };
        VarNode* v = add(sum_over(k), add(reshape_to(merged), x));
        for (size_t d = 0; d < k; ++d)
            if (reduced[d] && xs[d] != 1)
                v = add(sum_over(d), v);
        v = add(reshape_to(last->shape()), v);
        v->set_name(last->name());
        graph.replace_var(last, v);
        std::replace(outputs.begin(), outputs.end(), last, v);
        for (auto r = chain.rbegin(); r != chain.rend(); ++r)
            graph.erase(*r);
        ++rewritten;
    }
    return rewritten;
}

}  // namespace neomeg::graph
