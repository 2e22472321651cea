#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;

OperatorNode* sole_reader(const VarNode* v, const std::vector<VarNode*>& outputs) {
    if (v->users().size() != 1 || std::find(outputs.begin(), outputs.end(), v) != outputs.end())
        return nullptr;
    return v->users()[0];
}

std::vector<float> host_values(const VarNode* c) {
    std::vector<float> v(c->shape().total_nr_elems());
    c->value().to_host(v.data());
    return v;
}

// A float32 constant's value per channel of `dst` (N, C, ...), when it broadcasts to dst along
// the channel axis only (NumPy rules: trailing axes aligned); empty otherwise.
std::vector<double> per_channel(const VarNode* c, const VarNode* dst) {
    const dnn::TensorShape &s = c->shape(), &d = dst->shape();
    if (c->kind() != VarNode::Kind::Const || c->dtype() != dnn::dtype::Float32 || s.ndim > d.ndim)
        return {};
    size_t channels = d[1], lead = d.ndim - s.ndim;
    bool varies = false;
    for (size_t i = 0; i < s.ndim; ++i) {
        size_t axis = lead + i;
        if (s[i] == 1)
            continue;
        if (axis != 1 || s[i] != channels)
            return {};
        varies = true;
    }
    std::vector<float> v = host_values(c);
    std::vector<double> out(channels);
    for (size_t k = 0; k < channels; ++k)
        out[k] = v[varies ? k : 0];
    return out;
}

// y -> a * y + d per channel, a step of the chain after a convolution.
struct Affine {
    std::vector<double> a, d;
};

// The affine map of `node` reading `y`, when its other operands are per-channel constants;
// false otherwise. BatchNormForward in INFERENCE mode whose statistics outputs nobody reads is
// one; so are ADD, SUB, MUL and TRUE_DIV by a constant (F.batch_norm's eval form).
bool step_of(const OperatorNode* node, const VarNode* y, const std::vector<VarNode*>& outputs,
             Affine& step) {
    size_t channels = y->shape()[1];
    if (node->outputs().empty() || !node->outputs()[0]->layout().eq_layout(y->layout()))
        return false;
    if (node->op().id() == ops::BatchNormForward::kId) {
        const auto& p = static_cast<const ops::BatchNormForward&>(node->op()).param();
        if (p.fwd_mode != dnn::param::BatchNorm::FwdMode::INFERENCE || node->inputs()[0] != y)
            return false;
        for (size_t i = 1; i < node->outputs().size(); ++i) {
            const VarNode* o = node->outputs()[i];
            if (!o->users().empty() ||
                std::find(outputs.begin(), outputs.end(), o) != outputs.end())
                return false;
        }
        std::vector<double> par[4];
        for (size_t i = 0; i < 4; ++i) {
            const VarNode* c = node->inputs()[i + 1];
            if (c->kind() != VarNode::Kind::Const || c->dtype() != dnn::dtype::Float32 ||
                c->shape().total_nr_elems() != channels)
                return false;
            std::vector<float> v = host_values(c);
            par[i].assign(v.begin(), v.end());
        }
        step.a.resize(channels);
        step.d.resize(channels);
        for (size_t k = 0; k < channels; ++k) {
            step.a[k] = par[0][k] / std::sqrt(par[3][k] + double(p.epsilon));
            step.d[k] = par[1][k] - par[2][k] * step.a[k];
        }
        return true;
    }
    if (node->op().id() != ops::Elemwise::kId || node->inputs().size() != 2)
        return false;
    Mode mode = static_cast<const ops::Elemwise&>(node->op()).param().mode;
    bool y_first = node->inputs()[0] == y;
    const VarNode* c = node->inputs()[y_first ? 1 : 0];
    if (c == y)
        return false;
    std::vector<double> k = per_channel(c, y);
    if (k.empty())
        return false;
    std::vector<double> one(channels, 1.0), zero(channels, 0.0), neg(channels, -1.0);
    switch (mode) {
        case Mode::ADD:
            step = {one, k};
            return true;
        case Mode::SUB:  // y - k, or k - y
            step = y_first ? Affine{one, zero} : Affine{neg, k};
            if (y_first)
                for (size_t i = 0; i < channels; ++i)
                    step.d[i] = -k[i];
            return true;
        case Mode::MUL:
            step = {k, zero};
            return true;
        case Mode::TRUE_DIV:
            if (!y_first)
                return false;
            for (double& x : k)
                x = 1.0 / x;
            step = {k, zero};
            return true;
        default:
            return false;
    }
}

DeviceTensor float_tensor(const std::vector<double>& v, const dnn::TensorShape& shape,
                          CompNode cn) {
    std::vector<float> f(v.begin(), v.end());
    return DeviceTensor::from_host(f.data(), shape, dnn::dtype::Float32, cn);
}

}  // namespace

size_t fold_batch_norm(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t folded = 0;
    std::unordered_set<const OperatorNode*> erased;
    for (OperatorNode* conv : graph.topo_order()) {
        if (erased.count(conv))
            continue;
        bool is_conv = conv->op().id() == ops::ConvolutionForward::kId;
        bool is_conv_bias = conv->op().id() == ops::ConvBias::kId;
        if (!is_conv && !is_conv_bias)
            continue;
        VarNode* y = conv->outputs()[0];
        VarNode* filter = conv->inputs()[1];
        if (y->dtype() != dnn::dtype::Float32 || filter->kind() != VarNode::Kind::Const ||
            filter->dtype() != dnn::dtype::Float32 || y->shape().ndim < 3)
            continue;
        size_t channels = y->shape()[1];
        Affine total{std::vector<double>(channels, 1.0), std::vector<double>(channels, 0.0)};
        if (is_conv_bias) {
            const auto& p = static_cast<const ops::ConvBias&>(conv->op()).param();
            const VarNode *b = conv->inputs()[2], *z = conv->inputs()[3];
            if (p.nonlineMode != dnn::param::ConvBias::NonlineMode::IDENTITY ||
                z->shape().ndim != 0)
                continue;
            if (b->shape().ndim != 0) {
                total.d = per_channel(b, y);
                if (total.d.empty())
                    continue;
            }
        }
        // Absorb the chain of affine steps, each read only by the next.
        std::vector<OperatorNode*> absorbed;
        VarNode* cur = y;
        Affine step;
        for (OperatorNode* next = sole_reader(cur, outputs);
             next && step_of(next, cur, outputs, step); next = sole_reader(cur, outputs)) {
            for (size_t k = 0; k < channels; ++k) {
                total.a[k] *= step.a[k];
                total.d[k] = total.d[k] * step.a[k] + step.d[k];
            }
            absorbed.push_back(next);
            cur = next->outputs()[0];
        }
        if (absorbed.empty())
            continue;

        // filter (OC, IC/group, k...): row oc scales by a[oc].
        CompNode cn = conv->comp_node();
        std::vector<float> w = host_values(filter);
        size_t per_oc = w.size() / channels;
        std::vector<double> w2(w.size());
        for (size_t i = 0; i < w.size(); ++i)
            w2[i] = w[i] * total.a[i / per_oc];
        VarNode* new_filter = graph.constant(float_tensor(w2, filter->shape(), cn), filter->name());
        dnn::TensorShape bias_shape;
        bias_shape.ndim = y->shape().ndim;
        for (size_t d = 0; d < bias_shape.ndim; ++d)
            bias_shape[d] = d == 1 ? channels : 1;
        VarNode* bias = graph.constant(float_tensor(total.d, bias_shape, cn));
        VarNode* result;
        if (is_conv_bias) {
            VarNode* in[] = {conv->inputs()[0], new_filter, bias, conv->inputs()[3]};
            result = graph.insert1(conv->op(), in);
        } else {
            // The bias as an ADD: fuse_conv_bias makes one ConvBias of both where that is faster.
            VarNode* conv_out = graph.insert1(conv->op(), {conv->inputs()[0], new_filter});
            result =
                    graph.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::ADD}), {conv_out, bias});
        }
        result->set_name(cur->name());
        graph.replace_var(cur, result);
        for (VarNode*& o : outputs)
            if (o == cur)
                o = result;
        for (auto it = absorbed.rbegin(); it != absorbed.rend(); ++it) {
            erased.insert(*it);
            graph.erase(*it);
        }
        erased.insert(conv);
        graph.erase(conv);
        ++folded;
    }
    return folded;
}

}  // namespace neomeg::graph
