// Graph rewrites that compile() runs on its copy of the graph; each works on any graph and
// returns how many nodes it changed. `outputs` are the vars the caller needs: a pass that
// replaces one of them updates the list.
#pragma once

#include <span>
#include <vector>

#include "neomeg/graph/graph.h"

namespace neomeg::graph {

// Runs every operator node whose inputs are all constants (and each op without inputs: every
// registry op is a pure function of its inputs and params, the RNGs of their seed) once, now,
// and replaces its outputs with constants holding the results; the folded nodes are erased.
// Except a node whose outputs are more than kFoldGrowthLimit bytes larger than its inputs (a
// broadcast of a scalar): a constant is resident for the executable's life, where the step's
// output lives in the arena only until its last reader. Returns the number of nodes folded.
// passes/const_fold.cpp
inline constexpr size_t kFoldGrowthLimit = size_t(1) << 20;
size_t fold_constants(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Merges operator nodes that apply the same op with equal params to the same inputs (and give
// equal output layouts) on one comp node: readers of the later node read the earlier one's
// outputs, and the later node is erased. Returns the number of nodes merged. passes/cse.cpp
size_t eliminate_common_subexpressions(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Folds BatchNormForward in INFERENCE mode, and the per-channel affine Elemwise ops that
// F.batch_norm's eval form and a bias add are (ADD, SUB, MUL, TRUE_DIV by a float32 constant that
// varies at most along the channel axis), into the ConvolutionForward or ConvBias (IDENTITY, no z)
// before them: the filter, a constant, is scaled per output channel and the shifts become a
// constant bias, ConvBias's own or an ADD after the convolution. Each step must be read only by
// the next. Changes rounding slightly: for inference (trace.dump's optimize_for_inference).
// Returns the number of convolutions rewritten. passes/fold_batch_norm.cpp
size_t fold_batch_norm(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Rewrites SWITCH_GT0(x, grad) (ReLU's backward) into SWITCH_GT0(relu(x), grad) where a RELU
// of x exists: the two agree everywhere, and x is then read by the RELU alone, so x dies at the
// RELU (which may overwrite it in place) instead of living to the backward, and a convolution's
// bias add before the RELU can fuse the activation into ConvBias. Run it before fuse_conv_bias
// and fuse_elemwise. Returns the number of nodes rewritten. passes/relu_mask.cpp
size_t mask_relu_grads_by_output(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Rewrites SWITCH_GT0(x, PoolingBackward(x, y, dy)), MAX pooling's backward masked by its own
// src (a ReLU's backward after mask_relu_grads_by_output: conv -> relu -> max pool), where y is
// PoolingForward(x) with the same param and the backward's result is read by the mask alone, into
// PoolingBackward(x, y, SWITCH_GT0(y, dy)): each window's gradient lands on an element equal to
// the window's maximum, so masking by the maximum before the scatter gives every element the same
// value, bit for bit (NaNs and zeros included), and the mask sweeps the pooled tensor (a quarter of
// the elements for 2x2 windows) instead of the full one. Returns the number of masks moved.
// passes/mask_before_max_pool_grad.cpp
size_t mask_before_max_pool_grads(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Rewrites ConvolutionForward followed by an ADD of a (1, OC, 1, ...) bias, an ADD of a residual
// of the output's shape, and a RELU, SIGMOID or H_SWISH (any of them, in that order, each read
// only by the next) into one ConvBias; an absent bias or residual is a constant of ndim 0. With
// `require_own_kernel`, only on comp nodes whose backend has a ConvBias kernel of its own (on
// x86 without one, ConvBias would run the naive kernel, slower than what it replaces). Returns
// the number of ConvBias nodes made. passes/fuse_conv_bias.cpp
size_t fuse_conv_bias(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                      bool require_own_kernel = false);

// Runs chains of convolutions (ConvolutionForward, ConvBias; group 1, depthwise, or groups of whole
// channel blocks), max/average poolings, BatchNorms, their backward ops and the elementwise ops
// between them (modes that keep zeros zero; operands of one shape, per-channel (1, C, 1...) ones, a
// finite scalar constant factor) on float32 tensors with 1 to 3 spatial dims in
// ChannelBlock's layout (oneDNN's nC[d][h]w<block>c as a dense (N, ceil(C/block), spatial...,
// block) tensor): ConvBiasBlocked, PoolingBlocked, the blocked training ops and Elemwise on the
// blocked tensors, with a ChannelBlock where a member reads a plain value and a ChannelUnblock
// where anything else (or the caller) reads a member's value. A convolution of a plain src whose
// value no member reads stays as it is. Constant filters are marked so that the kernels convert
// them once. `block` 0 asks each node's backend (dnn::Handle::preferred_channel_block; nodes on a
// backend that prefers none are left alone). Returns the number of nodes rewritten.
// passes/propagate_channel_blocked.cpp
size_t propagate_channel_blocked(ComputingGraph& graph, std::vector<VarNode*>& outputs,
                                 size_t block = 0);

// Fuses relus into the blocked BatchNorms that propagate_channel_blocked makes: a
// BatchNormForwardBlocked whose dst only a RELU reads becomes a BatchNormReluForwardBlocked giving
// the RELU's value, and a BatchNormBackwardBlocked whose diff is a SWITCH_GT0(mask, grad) (a relu's
// backward) that nothing else reads becomes a BatchNormReluBackwardBlocked of grad and mask; each
// also through one Reshape between them (BatchNorm1d's), each step read only by the next. Each
// saves a sweep over the activation. Returns the number of nodes fused.
// passes/fuse_blocked_batch_norm_relu.cpp
size_t fuse_blocked_batch_norm_relu(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Fuses a residual block's end into the blocked BatchNorms that propagate_channel_blocked makes: a
// BatchNormForwardBlocked whose dst only an ADD (of another operand z of dst's shape) reads, that
// sum read only by a RELU, becomes a BatchNormAddReluForwardBlocked of z giving the RELU's value;
// and a BatchNormBackwardBlocked whose diff is SWITCH_GT0(mask, ADD(a, b)) (the relu's backward of
// the gradients' sum), the ADD read only by the SWITCH_GT0, becomes a
// BatchNormAddReluBackwardBlocked of a, b and mask, whose masked sum the SWITCH_GT0's other
// readers (the residual branch) read. Saves the ADD's and the mask's sweeps over the activation.
// Run it before fuse_blocked_batch_norm_relu, which would take a mask over a sum without the
// sum. Returns the number of nodes fused.
// passes/fuse_blocked_batch_norm_add_relu.cpp
size_t fuse_blocked_batch_norm_add_relu(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Rewrites a chain of Reduce(SUM) nodes, each read only by the next, that sums leading axes of a
// contiguous float32 value x together with its trailing axes (a bias gradient: N, H and W of an
// NCHW gradient, as axis 0, then 2, then 3) into Reshape(x) -> one Reduce over the trailing axes
// merged into one contiguous row -> Reduces of the leading axes -> Reshape to the chain's shape:
// the first sum then walks x's rows in memory order and leaves a small value for the rest,
// where summing axis 0 first walks x whole with a stride. Changes the order of the additions
// (float rounding), not what is summed. Returns the number of chains rewritten.
// passes/reduce_inner_first.cpp
size_t reduce_inner_axes_first(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Replaces each group of Elemwise nodes on one comp node that compute in one dtype, give one
// shape, and whose intermediate results only the group reads, by one FusedElemwise node
// (graph/fused_elemwise.h) that makes a single pass over memory. An intermediate that is also
// one of `outputs` (an optimizer's momentum buffer, which the update of the parameter reads) is
// a further output of the fused node, written in the same pass. Returns the
// number of groups fused. The fused node is not in the operator registry: a model file cannot
// hold it. passes/fuse_elemwise.cpp
size_t fuse_elemwise(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Erases the operator nodes that `outputs` do not need, and constants nothing reads. Inputs
// stay: they are the graph's interface. Returns the number of nodes and constants erased.
// passes/dce.cpp
size_t eliminate_dead_code(ComputingGraph& graph, std::span<VarNode* const> outputs);

}  // namespace neomeg::graph
