// Layout propagation: chains of convolutions, batch normalisations, poolings and the elementwise
// ops between them, forward and backward, run on ChannelBlock's layout (dnn/ops/defs/
// tensor_shape.py: oneDNN's nC[d][h]w16c / 8c as a dense tensor of one more dim), converted back to
// the plain layout only where something else reads a value. The rules below that depend only on
// layouts and params live in neomeg/dnn/channel_blocked_rules.h, which eager mode's blocked
// dispatch (imperative/src/blocked_dispatch.cpp) shares.
//
// Members ("blocked" nodes), decided in topological order on 1-D, 2-D and 3-D float32 tensors
// (N, C, spatial...) of static shape:
// - ConvolutionForward and ConvBias (group 1, depthwise, or groups of whole channel blocks: what
//   oneDNN has blocked kernels for; a per-channel bias or none; z of dst's shape or none): always,
//   since the convolution takes a plain src as well, except a convolution whose src is plain and
//   whose output no member reads (it would only move the reorder it makes anyway into a node of its
//   own);
// - PoolingForward, BatchNormForward (either mode) and a Reshape that only adds or drops spatial
//   dims of size 1 (BatchNorm1d's to 4-D and back): when their src is blocked;
// - BatchNormBackward: when diff or src is blocked; ConvolutionBackwardFilter (groups as above):
//   when src or diff is blocked; ConvolutionBackwardData (groups as above): as a convolution, its
//   diff in the place of src (a plain diff, the loss's gradient at the head, gets a ChannelBlock
//   when a member reads the result). So a training step's backward stays blocked wherever its
//   forward was;
// - Elemwise of a mode that maps zeros to zero (so the padding channels of the last block stay
//   zero, which the blocked kernels rely on), on operands of the output's shape or per-channel
//   (1, C, 1...) ones, and for MUL also a finite scalar constant: when one operand is blocked; a
//   plain operand gets a ChannelBlock, except a scalar, which broadcasts as it is; but not when
//   no member reads its value, it has such a plain operand, and each blocked operand has a plain
//   reader besides (converting there would only add conversions).
// A tensor of fewer channels than a block is never converted into the blocked layout nor made
// blocked by a training op, except a graph input or constant read as a filter gradient's src (the
// image of the first convolution); nor does a depthwise convolution (one input channel
// a group) from a plain src of fewer channels than a block to fewer than a block join.
// A member's blocked value that a non-member, a member at a plain input (a filter, a scale) or
// the caller reads gets one ChannelUnblock. Plain outputs (a filter's gradient, BatchNorm's
// statistics) stay plain. Each new node runs where the node it replaces ran.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/op_def.h"
#include "neomeg/op/view_params.h"

namespace neomeg::graph {
namespace {

using Mode = dnn::param::Elemwise::Mode;
using dnn::channel_blocked::blockable_groups;
using dnn::channel_blocked::blocked_shape;
using dnn::channel_blocked::Operand;
using dnn::channel_blocked::zero_preserving;

bool plain_spatial_f32(const VarNode* v) {
    return !v->shape_dynamic() && dnn::channel_blocked::plain_spatial_f32(v->shape(), v->dtype());
}

const VarNode* absent_or(const VarNode* v) {
    return v->shape().ndim == 0 ? nullptr : v;
}

// A ConvolutionForward's or ConvBias's group count.
uint32_t conv_group(const OperatorNode* node) {
    const OpDef& op = node->op();
    return op.id() == ops::ConvolutionForward::kId
                   ? static_cast<const ops::ConvolutionForward&>(op).param().group
                   : static_cast<const ops::ConvBias&>(op).param().group;
}

bool is_convolution(const OperatorNode* node, size_t block) {
    const OpDef& op = node->op();
    if (op.id() != ops::ConvolutionForward::kId && op.id() != ops::ConvBias::kId)
        return false;
    const VarNode* dst = node->outputs()[0];
    if (!plain_spatial_f32(dst) || !plain_spatial_f32(node->inputs()[0]))
        return false;
    if (!blockable_groups(conv_group(node), node->inputs()[0]->shape()[1], dst->shape()[1], block))
        return false;
    if (op.id() == ops::ConvolutionForward::kId)
        return true;
    const VarNode* bias = absent_or(node->inputs()[2]);
    if (bias && !dnn::channel_blocked::per_channel_bias(bias->shape(), dst->shape()))
        return false;
    const VarNode* z = absent_or(node->inputs()[3]);
    return !z || (z->layout().eq_shape(dst->layout()) && z->dtype() == dst->dtype());
}

bool is_pooling(const OperatorNode* node) {
    return node->op().id() == ops::PoolingForward::kId && plain_spatial_f32(node->outputs()[0]);
}

Operand operand_kind(const VarNode* v, const VarNode* dst) {
    return v->shape_dynamic() ? Operand::Other
                              : dnn::channel_blocked::operand_kind(v->layout(), dst->layout());
}

// A finite float32 constant: its product with the padding channels' zeros is zero.
bool finite_constant(const VarNode* v) {
    if (v->kind() != VarNode::Kind::Const || v->dtype() != dnn::dtype::Float32)
        return false;
    float x;
    v->value().to_host(&x);
    return std::isfinite(x);
}

// A per-channel or scalar operand of an elementwise op.
bool broadcast_operand(const OperatorNode* node, size_t i) {
    if (node->op().id() != ops::Elemwise::kId)
        return false;
    const Operand k = operand_kind(node->inputs()[i], node->outputs()[0]);
    return k == Operand::PerChannel || k == Operand::Scalar;
}

// An operand kept plain by an elementwise member.
bool plain_operand(const OperatorNode* node, size_t i) {
    return operand_kind(node->inputs()[i], node->outputs()[0]) == Operand::Scalar;
}

bool is_blockable_elemwise(const OperatorNode* node) {
    if (node->op().id() != ops::Elemwise::kId)
        return false;
    const Mode mode = static_cast<const ops::Elemwise&>(node->op()).param().mode;
    const VarNode* dst = node->outputs()[0];
    if (!zero_preserving(mode) || !plain_spatial_f32(dst))
        return false;
    // Per-channel operands are blocked with zeros past C, so the padding stays f(0, 0) = 0; a
    // scalar s meets the padding's zeros too, and only 0 * s (s finite) is sure to be 0.
    bool full = false;
    for (const VarNode* v : node->inputs()) {
        switch (operand_kind(v, dst)) {
            case Operand::Full:
                full = true;
                break;
            case Operand::PerChannel:
                break;
            case Operand::Scalar:
                if (mode != Mode::MUL || !finite_constant(v))
                    return false;
                break;
            case Operand::Other:
                return false;
        }
    }
    return full;
}

// A Reshape that only adds or drops spatial dims of size 1, e.g. BatchNorm1d's (N, C, L) <->
// (N, C, L, 1): the blocked tensors of both shapes are the same memory.
bool is_unit_reshape(const OperatorNode* node) {
    if (node->op().id() != ops::Reshape::kId || !plain_spatial_f32(node->inputs()[0]) ||
        !plain_spatial_f32(node->outputs()[0]))
        return false;
    const dnn::TensorShape &a = node->inputs()[0]->shape(), &b = node->outputs()[0]->shape();
    auto spatial = [](const dnn::TensorShape& s) {
        std::vector<size_t> r;
        for (size_t d = 2; d < s.ndim; ++d)
            if (s[d] != 1)
                r.push_back(s[d]);
        return r;
    };
    return a[0] == b[0] && a[1] == b[1] && spatial(a) == spatial(b);
}

// BatchNormForward, or BatchNormBackward (whose src is input 1), on float32 tensors with 1 to 3
// spatial dims.
bool is_batch_norm(const OperatorNode* node, OpId id) {
    if (node->op().id() != id || !plain_spatial_f32(node->inputs()[0]) ||
        !plain_spatial_f32(node->outputs()[0]) ||
        (id == ops::BatchNormBackward::kId && !plain_spatial_f32(node->inputs()[1])))
        return false;
    return std::all_of(node->inputs().begin(), node->inputs().end(),
                       [](const VarNode* v) { return v->dtype() == dnn::dtype::Float32; });
}

// A backward convolution of blockable groups whose plain float32 tensors (all three) have
// static shapes.
template <class Op>
bool is_backward_convolution(const OperatorNode* node, size_t block) {
    if (node->op().id() != Op::kId || !plain_spatial_f32(node->inputs()[0]) ||
        !plain_spatial_f32(node->inputs()[1]) || !plain_spatial_f32(node->outputs()[0]))
        return false;
    // Data: (filter, diff) -> grad of src's shape; filter: (src, diff) -> the filter's gradient.
    const bool data = Op::kId == ops::ConvolutionBackwardData::kId;
    const size_t ic = (data ? node->outputs()[0] : node->inputs()[0])->shape()[1];
    const size_t oc = node->inputs()[1]->shape()[1];
    return blockable_groups(static_cast<const Op&>(node->op()).param().group, ic, oc, block);
}

// The inputs a member reads in the blocked layout.
std::vector<size_t> blocked_inputs(const OperatorNode* node) {
    const OpId id = node->op().id();
    if (id == ops::ConvolutionForward::kId || id == ops::ConvBias::kId ||
        id == ops::PoolingForward::kId || id == ops::BatchNormForward::kId ||
        id == ops::Reshape::kId)
        return {0};
    if (id == ops::ConvolutionBackwardData::kId)
        return {1};
    if (id == ops::BatchNormBackward::kId || id == ops::ConvolutionBackwardFilter::kId)
        return {0, 1};
    std::vector<size_t> all;  // an elementwise member: all but its scalars
    for (size_t i = 0; i < node->inputs().size(); ++i)
        if (!plain_operand(node, i))
            all.push_back(i);
    return all;
}

dnn::param::ConvBiasBlocked blocked_param(const OperatorNode* conv, size_t block,
                                          bool filter_is_const) {
    if (conv->op().id() == ops::ConvBias::kId)
        return dnn::channel_blocked::conv_bias_blocked_param(
                static_cast<const ops::ConvBias&>(conv->op()).param(), block, filter_is_const);
    return dnn::channel_blocked::conv_bias_blocked_param(
            static_cast<const ops::ConvolutionForward&>(conv->op()).param(), block,
            filter_is_const);
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
        auto in_blocked = [&](size_t i) {
            return i < node->inputs().size() && blocked.count(node->inputs()[i]) != 0;
        };
        bool any_blocked = std::any_of(node->inputs().begin(), node->inputs().end(),
                                       [&](const VarNode* v) { return blocked.count(v) != 0; });
        // A tensor of fewer channels than a block is never converted into the blocked layout (a
        // ChannelBlock) nor made blocked by a training op, so that e.g. LeNet's backward (6
        // channels, a 1-channel image) stays plain. Half a block (the bound this replaced, from
        // the padding's memory) let AVX2's blocks of 8 take those 6 channels, and oneDNN 2.6's
        // blocked filter gradient of the first convolution then ran 1.5 ms against 0.4 plain:
        // LeNet's traced step went from 2.9 to 4.3 ms (1 thread, AMD EPYC).
        const size_t b = block_of(node);
        auto few = [&](const VarNode* v) { return v->shape()[1] < b; };
        auto blocked_or_wide = [&](size_t i) { return in_blocked(i) || !few(node->inputs()[i]); };
        // A filter gradient's src may be the image: an input, converted once per step, costs less
        // than the plain convolution's reorders of the (wide) gradient.
        auto blocked_or_input = [&](size_t i) {
            return blocked_or_wide(i) || node->inputs()[i]->kind() != VarNode::Kind::Computed;
        };
        // An elementwise op's per-channel and scalar operands are small whatever their padding.
        bool plain_operands_wide = true;
        for (size_t i = 0; i < node->inputs().size(); ++i)
            plain_operands_wide &= blocked_or_wide(i) || broadcast_operand(node, i);
        // A depthwise convolution (a group per input channel) from a plain src of fewer channels
        // than a block to fewer than a block, LeNet's 1 -> 6 first layer among them, stays plain:
        // its blocked dst would be mostly padding, what reads it (forward and backward) stays
        // plain by the rule above, and on plain memory x86 runs it by our own loops (LeNet's at
        // batch 64: 0.26 ms with bias and relu, oneDNN's blocked kernel 0.38 ms and a 0.07 ms
        // conversion out).
        const bool narrow_conv = is_convolution(node, b) && !in_blocked(0) &&
                                 few(node->inputs()[0]) && few(node->outputs()[0]) &&
                                 conv_group(node) == node->inputs()[0]->shape()[1];
        bool joins =
                (is_convolution(node, b) && !narrow_conv) || (is_pooling(node) && in_blocked(0)) ||
                (is_unit_reshape(node) && in_blocked(0)) ||
                (is_blockable_elemwise(node) && any_blocked && plain_operands_wide) ||
                (is_batch_norm(node, ops::BatchNormForward::kId) && in_blocked(0) &&
                 !few(node->inputs()[0])) ||
                (is_batch_norm(node, ops::BatchNormBackward::kId) &&
                 (in_blocked(0) || in_blocked(1)) && blocked_or_wide(0) && blocked_or_wide(1) &&
                 !few(node->inputs()[1])) ||
                (is_backward_convolution<ops::ConvolutionBackwardData>(node, b) &&
                 blocked_or_wide(1) && !few(node->outputs()[0])) ||
                (is_backward_convolution<ops::ConvolutionBackwardFilter>(node, b) &&
                 (in_blocked(0) || in_blocked(1)) && blocked_or_input(0) && blocked_or_wide(1));
        if (!joins)
            continue;
        member.insert(node);
        // A filter's gradient is plain; every other member's first output is blocked.
        if (node->op().id() != ops::ConvolutionBackwardFilter::kId)
            blocked.insert(node->outputs()[0]);
    }
    // A convolution with a plain src (a backward one: a plain diff) and no member reading it stays
    // as it is. Nothing that joined reads its output, so no other membership depends on it.
    for (const OperatorNode* node : order) {
        const bool backward = node->op().id() == ops::ConvolutionBackwardData::kId;
        if (!member.count(node) || !(is_convolution(node, block_of(node)) || backward) ||
            blocked.count(node->inputs()[backward ? 1 : 0]))
            continue;
        const auto& users = node->outputs()[0]->users();
        if (std::none_of(users.begin(), users.end(),
                         [&](const OperatorNode* u) { return member.count(u) != 0; })) {
            member.erase(node);
            blocked.erase(node->outputs()[0]);
        }
    }
    // An elementwise member that no member reads, with a plain operand of the output's shape and
    // blocked operands that something reads plain anyway, runs plain: blocked, it would cost a
    // ChannelBlock of that operand and a ChannelUnblock of its value, plain nothing, as the
    // ChannelUnblocks of its blocked operands exist for their other readers. LeNet's backward
    // masks the pooling's plain gradient by the second convolution's relu, whose plain value the
    // pooling's backward reads: 39 us of conversions a step. Readers first, so that a chain of
    // them goes plain whole.
    const std::unordered_set<const VarNode*> is_output(outputs.begin(), outputs.end());
    auto has_plain_reader = [&](const VarNode* v, const OperatorNode* except) {
        if (is_output.count(v))
            return true;
        for (const OperatorNode* u : v->users()) {
            if (u == except)
                continue;
            if (!member.count(u))
                return true;
            const std::vector<size_t> bi = blocked_inputs(u);
            for (size_t i = 0; i < u->inputs().size(); ++i)
                if (u->inputs()[i] == v && std::find(bi.begin(), bi.end(), i) == bi.end())
                    return true;
        }
        return false;
    };
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const OperatorNode* node = *it;
        if (!member.count(node) || node->op().id() != ops::Elemwise::kId)
            continue;
        const auto& users = node->outputs()[0]->users();
        if (std::any_of(users.begin(), users.end(),
                        [&](const OperatorNode* u) { return member.count(u) != 0; }))
            continue;
        bool converts_in = false, unblocks_anyway = true;
        for (size_t i = 0; i < node->inputs().size(); ++i) {
            const VarNode* in = node->inputs()[i];
            if (blocked.count(in))
                unblocks_anyway &= has_plain_reader(in, node);
            else
                converts_in |= !broadcast_operand(node, i);
        }
        if (converts_in && unblocks_anyway) {
            member.erase(node);
            blocked.erase(node->outputs()[0]);
        }
    }
    if (member.empty())
        return 0;

    // Whether `user` reads `v` as plain memory: a non-member, or a member at a plain input.
    auto reads_plain = [&](const OperatorNode* user, const VarNode* v) {
        if (!member.count(user))
            return true;
        const std::vector<size_t> b = blocked_inputs(user);
        for (size_t i = 0; i < user->inputs().size(); ++i)
            if (user->inputs()[i] == v && std::find(b.begin(), b.end(), i) == b.end())
                return true;
        return false;
    };

    std::unordered_map<const VarNode*, VarNode*> twin;  // a var -> its blocked value
    const OperatorNode* placing = nullptr;              // the node being rewritten
    auto blocked_value = [&](VarNode* v, size_t b) {
        auto it = twin.find(v);
        if (it != twin.end())
            return it->second;
        dnn::param::ChannelBlock p;
        p.block = static_cast<uint32_t>(b);
        VarNode* t = graph.insert1(ops::ChannelBlock(p), {v});
        graph.take_place_of(t->owner(), placing);
        twin[v] = t;
        return t;
    };
    auto absent = [&](const VarNode* like) {
        const uint64_t zero = 0;
        return graph.constant(DeviceTensor::from_host(&zero, {}, like->dtype(), like->comp_node()));
    };
    std::vector<std::pair<VarNode*, VarNode*>> replacements;  // (old var, its new plain value)
    std::vector<OperatorNode*> rewritten;
    for (OperatorNode* node : order) {
        if (!member.count(node))
            continue;
        placing = node;
        const size_t b = block_of(node);
        const std::vector<VarNode*>& in = node->inputs();
        const OpId id = node->op().id();
        std::vector<VarNode*> results;
        if (is_convolution(node, b)) {
            const bool has_bias = id == ops::ConvBias::kId;
            VarNode* src = twin.count(in[0]) ? twin.at(in[0]) : in[0];
            VarNode* bias = has_bias && absent_or(in[2]) ? in[2] : absent(in[0]);
            VarNode* z = has_bias && absent_or(in[3]) ? blocked_value(in[3], b) : absent(in[0]);
            auto p = blocked_param(node, b, in[1]->kind() == VarNode::Kind::Const);
            results = {graph.insert1(ops::ConvBiasBlocked(p), {src, in[1], bias, z})};
        } else if (id == ops::PoolingForward::kId) {
            const auto& p = static_cast<const ops::PoolingForward&>(node->op()).param();
            results = {graph.insert1(ops::PoolingBlocked(p), {twin.at(in[0])})};
        } else if (id == ops::Reshape::kId) {
            neomeg::param::Reshape p;
            const dnn::TensorShape s = blocked_shape(node->outputs()[0]->shape(), b);
            for (size_t d = 0; d < s.ndim; ++d)
                p.shape.push_back(static_cast<int32_t>(s[d]));
            results = {graph.insert1(ops::Reshape(p), {twin.at(in[0])})};
        } else if (id == ops::BatchNormForward::kId) {
            const auto& p = static_cast<const ops::BatchNormForward&>(node->op()).param();
            results = graph.insert(ops::BatchNormForwardBlocked(p),
                                   {twin.at(in[0]), in[1], in[2], in[3], in[4]});
        } else if (id == ops::BatchNormBackward::kId) {
            const auto& p = static_cast<const ops::BatchNormBackward&>(node->op()).param();
            results = graph.insert(
                    ops::BatchNormBackwardBlocked(p),
                    {blocked_value(in[0], b), blocked_value(in[1], b), in[2], in[3], in[4]});
        } else if (id == ops::ConvolutionBackwardData::kId) {
            const auto& p = static_cast<const ops::ConvolutionBackwardData&>(node->op()).param();
            InsertOptions opt;
            opt.output_shapes = {blocked_shape(node->outputs()[0]->shape(), b)};
            results = {graph.insert1(ops::ConvolutionBackwardDataBlocked(p),
                                     {in[0], blocked_value(in[1], b)}, opt)};
        } else if (id == ops::ConvolutionBackwardFilter::kId) {
            const auto& p = static_cast<const ops::ConvolutionBackwardFilter&>(node->op()).param();
            InsertOptions opt;
            opt.output_shapes = {node->outputs()[0]->shape()};
            results = {graph.insert1(ops::ConvolutionBackwardFilterBlocked(p),
                                     {blocked_value(in[0], b), blocked_value(in[1], b)}, opt)};
        } else {
            std::vector<VarNode*> operands;
            for (size_t i = 0; i < in.size(); ++i)
                operands.push_back(plain_operand(node, i) ? in[i] : blocked_value(in[i], b));
            results = {graph.insert1(node->op(), operands)};
        }
        graph.take_place_of(results[0]->owner(), node);
        rewritten.push_back(node);
        for (size_t i = 0; i < results.size(); ++i) {
            VarNode* old = node->outputs()[i];
            if (!blocked.count(old)) {  // a plain output: the new node's is the same value
                results[i]->set_name(old->name());
                replacements.emplace_back(old, results[i]);
                continue;
            }
            twin[old] = results[i];
            const auto& users = old->users();
            if (is_output.count(old) || std::any_of(users.begin(), users.end(),
                                                    [&](auto* u) { return reads_plain(u, old); })) {
                dnn::param::ChannelUnblock p;
                p.channels = static_cast<uint32_t>(old->shape()[1]);
                VarNode* plain = graph.insert1(ops::ChannelUnblock(p), {results[i]});
                graph.take_place_of(plain->owner(), node);
                plain->set_name(old->name());
                replacements.emplace_back(old, plain);
            }
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
