// Layout propagation: chains of convolutions, poolings and the elementwise ops between them run on
// ChannelBlock's layout (dnn/ops/defs/tensor_shape.py: oneDNN's nChw16c / nChw8c as a dense 5-D
// tensor), converted back to plain NCHW only where something else reads a value.
//
// Members ("blocked" nodes), decided in topological order on 2-D float32 tensors of static shape:
// - ConvolutionForward and ConvBias (group 1; a per-channel bias or none; z of dst's shape or
//   none): always, since the convolution takes a plain src as well, except a convolution whose
//   src is plain and whose output no member reads (it would only move the reorder it makes
//   anyway into a node of its own);
// - PoolingForward: when its src is blocked;
// - Elemwise of a mode that maps zeros to zero (so the padding channels of the last block stay
//   zero, which the blocked convolutions rely on), on operands of the output's shape: when one
//   operand is blocked; a plain operand gets a ChannelBlock.
// A member's value that a non-member or the caller reads gets one ChannelUnblock.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "neomeg/graph/passes.h"
#include "neomeg/op/op_defs.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;

bool plain_2d_f32(const VarNode* v) {
    return v->shape().ndim == 4 && v->dtype() == dnn::dtype::Float32 && !v->shape_dynamic() &&
           !v->shape().is_empty();
}

bool zero_preserving(Mode m) {
    switch (m) {
        case Mode::RELU:
        case Mode::ABS:
        case Mode::NEGATE:
        case Mode::ADD:
        case Mode::SUB:
        case Mode::MUL:
        case Mode::MAX:
        case Mode::MIN:
            return true;
        default:
            return false;
    }
}

const VarNode* absent_or(const VarNode* v) {
    return v->shape().ndim == 0 ? nullptr : v;
}

bool is_convolution(const OperatorNode* node) {
    const OpDef& op = node->op();
    if (op.id() != ops::ConvolutionForward::kId && op.id() != ops::ConvBias::kId)
        return false;
    const VarNode* dst = node->outputs()[0];
    if (!plain_2d_f32(dst) || !plain_2d_f32(node->inputs()[0]))
        return false;
    if (op.id() == ops::ConvolutionForward::kId)
        return static_cast<const ops::ConvolutionForward&>(op).param().group == 1;
    if (op.id() != ops::ConvBias::kId || static_cast<const ops::ConvBias&>(op).param().group != 1)
        return false;
    if (const VarNode* bias = absent_or(node->inputs()[2])) {
        for (size_t d = 0; d < 4; ++d)
            if (bias->shape()[d] != (d == 1 ? dst->shape()[1] : 1))
                return false;
    }
    const VarNode* z = absent_or(node->inputs()[3]);
    return !z || (z->layout().eq_shape(dst->layout()) && z->dtype() == dst->dtype());
}

bool is_pooling(const OperatorNode* node) {
    return node->op().id() == ops::PoolingForward::kId && plain_2d_f32(node->outputs()[0]);
}

bool is_blockable_elemwise(const OperatorNode* node) {
    if (node->op().id() != ops::Elemwise::kId ||
        !zero_preserving(static_cast<const ops::Elemwise&>(node->op()).param().mode))
        return false;
    const VarNode* dst = node->outputs()[0];
    return plain_2d_f32(dst) &&
           std::all_of(node->inputs().begin(), node->inputs().end(), [&](const VarNode* v) {
               return v->dtype() == dst->dtype() && v->layout().eq_shape(dst->layout());
           });
}

dnn::param::ConvBiasBlocked blocked_param(const OperatorNode* conv, size_t block,
                                          bool filter_is_const) {
    dnn::param::ConvBiasBlocked p;
    auto copy_geometry = [&](const auto& c) {
        p.mode = static_cast<dnn::param::ConvBiasBlocked::Mode>(c.mode);
        p.stride = c.stride;
        p.padding = c.padding;
        p.dilation = c.dilation;
        p.group = c.group;
    };
    if (conv->op().id() == ops::ConvBias::kId) {
        const auto& c = static_cast<const ops::ConvBias&>(conv->op()).param();
        copy_geometry(c);
        p.nonlineMode = static_cast<dnn::param::ConvBiasBlocked::NonlineMode>(c.nonlineMode);
    } else {
        copy_geometry(static_cast<const ops::ConvolutionForward&>(conv->op()).param());
    }
    p.block = static_cast<uint32_t>(block);
    p.filter_is_const = filter_is_const;
    return p;
}

}  // namespace

size_t propagate_channel_blocked(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                                 size_t block) {
    const std::vector<OperatorNode*> order = graph.topo_order();
    auto block_of = [&](const OperatorNode* node) {
        return block ? block : node->comp_node().dnn_handle()->preferred_channel_block();
    };

    // Which nodes run blocked, and which vars they make blocked.
    std::unordered_set<const OperatorNode*> member;
    std::unordered_set<const VarNode*> blocked;
    for (const OperatorNode* node : order) {
        if (block_of(node) == 0)
            continue;
        bool src_blocked = blocked.count(node->inputs().empty() ? nullptr : node->inputs()[0]);
        bool any_blocked = std::any_of(node->inputs().begin(), node->inputs().end(),
                                       [&](const VarNode* v) { return blocked.count(v) != 0; });
        if (is_convolution(node) || (is_pooling(node) && src_blocked) ||
            (is_blockable_elemwise(node) && any_blocked)) {
            member.insert(node);
            blocked.insert(node->outputs()[0]);
        }
    }
    // A convolution with a plain src and no member reading it stays as it is. Nothing that joined
    // reads its output, so no other membership depends on it.
    for (const OperatorNode* node : order) {
        if (!member.count(node) || !is_convolution(node) || blocked.count(node->inputs()[0]))
            continue;
        const auto& users = node->outputs()[0]->users();
        if (std::none_of(users.begin(), users.end(),
                         [&](const OperatorNode* u) { return member.count(u) != 0; })) {
            member.erase(node);
            blocked.erase(node->outputs()[0]);
        }
    }
    if (member.empty())
        return 0;

    std::unordered_map<const VarNode*, VarNode*> twin;  // a var -> its blocked value
    auto blocked_value = [&](VarNode* v, size_t b) {
        auto it = twin.find(v);
        if (it != twin.end())
            return it->second;
        dnn::param::ChannelBlock p;
        p.block = static_cast<uint32_t>(b);
        VarNode* t = graph.insert1(ops::ChannelBlock(p), {v});
        twin[v] = t;
        return t;
    };
    auto absent = [&](const VarNode* like) {
        const uint64_t zero = 0;
        return graph.constant(DeviceTensor::from_host(&zero, {}, like->dtype(), like->comp_node()));
    };
    std::unordered_set<const VarNode*> is_output(outputs.begin(), outputs.end());
    std::vector<std::pair<VarNode*, VarNode*>> replacements;  // (plain var, its ChannelUnblock)
    std::vector<OperatorNode*> rewritten;
    for (OperatorNode* node : order) {
        if (!member.count(node))
            continue;
        const size_t b = block_of(node);
        const std::vector<VarNode*>& in = node->inputs();
        VarNode* result;
        if (is_convolution(node)) {
            const bool has_bias = node->op().id() == ops::ConvBias::kId;
            VarNode* src = twin.count(in[0]) ? twin.at(in[0]) : in[0];
            VarNode* bias = has_bias && absent_or(in[2]) ? in[2] : absent(in[0]);
            VarNode* z = has_bias && absent_or(in[3]) ? blocked_value(in[3], b) : absent(in[0]);
            auto p = blocked_param(node, b, in[1]->kind() == VarNode::Kind::Const);
            result = graph.insert1(ops::ConvBiasBlocked(p), {src, in[1], bias, z});
        } else if (is_pooling(node)) {
            const auto& p = static_cast<const ops::PoolingForward&>(node->op()).param();
            result = graph.insert1(ops::PoolingBlocked(p), {twin.at(in[0])});
        } else {
            std::vector<VarNode*> operands;
            for (VarNode* v : in)
                operands.push_back(blocked_value(v, b));
            result = graph.insert1(node->op(), operands);
        }
        VarNode* old = node->outputs()[0];
        twin[old] = result;
        rewritten.push_back(node);
        const auto& users = old->users();
        if (is_output.count(old) ||
            std::any_of(users.begin(), users.end(), [&](auto* u) { return !member.count(u); })) {
            dnn::param::ChannelUnblock p;
            p.channels = static_cast<uint32_t>(old->shape()[1]);
            VarNode* plain = graph.insert1(ops::ChannelUnblock(p), {result});
            plain->set_name(old->name());
            replacements.emplace_back(old, plain);
        }
    }
    for (auto [old, plain] : replacements) {
        graph.replace_var(old, plain);
        std::replace(outputs.begin(), outputs.end(), old, plain);
    }
    for (auto it = rewritten.rbegin(); it != rewritten.rend(); ++it)
        graph.erase(*it);
    return rewritten.size();
}

}  // namespace neomeg::graph
