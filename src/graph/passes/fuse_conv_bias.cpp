#include <algorithm>
#include <unordered_set>

#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;
using Nonline = dnn::param::ConvBias::NonlineMode;

// The one reader of `v` when it has exactly one and is not a graph output.
OperatorNode* sole_reader(const VarNode* v, const std::vector<VarNode*>& outputs) {
    if (v->users().size() != 1 || std::find(outputs.begin(), outputs.end(), v) != outputs.end())
        return nullptr;
    return v->users()[0];
}

const ops::Elemwise* as_elemwise(const OperatorNode* node) {
    return node && node->op().id() == ops::Elemwise::kId
                   ? static_cast<const ops::Elemwise*>(&node->op())
                   : nullptr;
}

// For `node` = ADD(v, other) or ADD(other, v): the other input; null otherwise.
VarNode* other_addend(const OperatorNode* node, const VarNode* v) {
    const auto* e = as_elemwise(node);
    if (!e || e->param().mode != Mode::ADD)
        return nullptr;
    VarNode* a = node->inputs()[0];
    VarNode* b = node->inputs()[1];
    if (a == b)
        return nullptr;
    return a == v ? b : a;
}

// A bias ConvBias takes: (1, OC, 1, ...) in dst's dtype.
bool is_channel_bias(const VarNode* b, const VarNode* dst) {
    if (b->dtype() != dst->dtype() || b->shape().ndim != dst->shape().ndim || dst->shape().ndim < 2)
        return false;
    for (size_t d = 0; d < b->shape().ndim; ++d)
        if (b->shape()[d] != (d == 1 ? dst->shape()[1] : 1))
            return false;
    return true;
}

bool nonline_of(Mode mode, Nonline& out) {
    switch (mode) {
        case Mode::RELU:
            out = Nonline::RELU;
            return true;
        case Mode::SIGMOID:
            out = Nonline::SIGMOID;
            return true;
        case Mode::H_SWISH:
            out = Nonline::H_SWISH;
            return true;
        default:
            return false;
    }
}

}  // namespace

size_t fuse_conv_bias(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                      bool require_own_kernel) {
    size_t fused = 0;
    std::unordered_set<const OperatorNode*> erased;  // nodes of the order already rewritten
    for (OperatorNode* conv : graph.topo_order()) {
        if (erased.count(conv) || conv->op().id() != ops::ConvolutionForward::kId)
            continue;
        CompNode cn = conv->comp_node();
        if (require_own_kernel && !cn.dnn_handle()->has_own_kernel(dnn::ConvBias::kType))
            continue;
        VarNode* cur = conv->outputs()[0];
        // float32 only: a float16/bfloat16 ConvBias rounds once where the unfused ops round after
        // the convolution and again after the bias, which flips ReLU's mask for pre-activations
        // near zero; amp training then drifts from its eager run (python/test/amp's traced-step
        // test). Low precision keeps eager's rounding until that is measured worth it.
        if (cur->dtype() != dnn::dtype::Float32)
            continue;
        std::vector<OperatorNode*> absorbed{conv};
        VarNode *bias = nullptr, *z = nullptr;
        Nonline nonline = Nonline::IDENTITY;

        // conv (+ bias) (+ z) (+ activation), each step read only by the next.
        OperatorNode* next = sole_reader(cur, outputs);
        if (VarNode* b = other_addend(next, cur); b && is_channel_bias(b, cur)) {
            bias = b;
            absorbed.push_back(next);
            cur = next->outputs()[0];
            next = sole_reader(cur, outputs);
        }
        if (VarNode* r = other_addend(next, cur);
            r && r->layout().eq_shape(cur->layout()) && r->dtype() == cur->dtype()) {
            z = r;
            absorbed.push_back(next);
            cur = next->outputs()[0];
            next = sole_reader(cur, outputs);
        }
        if (const auto* act = as_elemwise(next); act && nonline_of(act->param().mode, nonline)) {
            absorbed.push_back(next);
            cur = next->outputs()[0];
        }
        if (absorbed.size() == 1)
            continue;

        const auto& cp = static_cast<const ops::ConvolutionForward&>(conv->op()).param();
        dnn::param::ConvBias p;
        p.nonlineMode = nonline;
        p.mode = static_cast<dnn::param::ConvBias::Mode>(cp.mode);
        p.stride = cp.stride;
        p.padding = cp.padding;
        p.dilation = cp.dilation;
        p.group = cp.group;
        // ConvBias reads an input of ndim 0 as absent (a zero, should a kernel read it).
        auto absent = [&] {
            const uint64_t zero = 0;
            return graph.constant(DeviceTensor::from_host(&zero, {}, cur->dtype(), cn));
        };
        VarNode* in[] = {conv->inputs()[0], conv->inputs()[1], bias ? bias : absent(),
                         z ? z : absent()};
        VarNode* result = graph.insert1(ops::ConvBias(p), in);
        result->set_name(cur->name());
        graph.replace_var(cur, result);
        for (VarNode*& o : outputs)
            if (o == cur)
                o = result;
        for (auto it = absorbed.rbegin(); it != absorbed.rend(); ++it) {
            erased.insert(*it);
            graph.erase(*it);
        }
        ++fused;
    }
    return fused;
}

}  // namespace neomeg::graph
