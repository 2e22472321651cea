// ComputingGraph: a DAG of VarNodes and OperatorNodes built from the operator registry. Each
// insert infers its outputs' layouts at once, so a bad graph fails where it is built, with the
// op, its params and the input layouts in the message. compile() turns the part of the graph
// that some outputs need into an Executable that runs it repeatedly on new input values.
//
//   graph::ComputingGraph g;
//   auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cn);
//   auto* y = g.insert1(ops::Elemwise(relu_param), {x});
//   auto exe = g.compile({y});
//   exe->set_input("x", value); exe->execute(); exe->output(0);
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neomeg/graph/executable.h"
#include "neomeg/graph/operator_node.h"
#include "neomeg/graph/var_node.h"

namespace neomeg::graph {

struct InsertOptions {
    // Every output's shape, for ops whose inputs do not fix it (generators such as Fill, a
    // strided convolution's input gradient); empty: none.
    std::vector<dnn::TensorShape> output_shapes;
    // Where an op without inputs runs; ops with inputs run on their inputs' comp node.
    CompNode comp_node;
};

// The passes compile() runs, in this order: fold_constants, eliminate_common_subexpr,
// fold_batch_norm, mask_relu_grads, mask_before_pool_grads, fuse_conv_bias, propagate_layouts,
// fuse_elemwise, reduce_inner_first, then dead-code removal;
// reuse_inplace is the memory plan's.
struct CompileOptions {
    bool fold_constants = true;            // passes/const_fold.cpp
    bool eliminate_common_subexpr = true;  // passes/cse.cpp
    // Rounds differently from the unfolded graph: off unless asked (inference).
    bool fold_batch_norm = false;  // passes/fold_batch_norm.cpp
    // Exact: ReLU's backward reads the RELU's output instead of its input.
    bool mask_relu_grads = true;  // passes/relu_mask.cpp
    // Exact: a mask by a max pooling's src moves before the pooling's backward, onto its dy.
    bool mask_before_pool_grads = true;  // passes/mask_before_max_pool_grad.cpp
    // Only where the backend has a ConvBias kernel of its own (see fuse_conv_bias).
    bool fuse_conv_bias = true;  // passes/fuse_conv_bias.cpp
    // Chains of convolutions on the backend's blocked layout, where it prefers one (x86 with
    // AVX2 or AVX-512); other backends are left alone. passes/propagate_channel_blocked.cpp
    bool propagate_layouts = true;
    bool fuse_elemwise = true;  // passes/fuse_elemwise.cpp
    // Sums a bias gradient's trailing axes first; rounds like a reordered sum.
    bool reduce_inner_first = true;  // passes/reduce_inner_first.cpp
    // An elementwise step writes its output over an input of the same layout whose last reader
    // it is (an intermediate, never a graph input, a constant or an output). executable.cpp
    bool reuse_inplace = true;
};

class ComputingGraph {
public:
    ComputingGraph();
    ~ComputingGraph();
    ComputingGraph(const ComputingGraph&) = delete;
    ComputingGraph& operator=(const ComputingGraph&) = delete;

    // A placeholder fed before each run; ParamError for an invalid comp node.
    VarNode* input(std::string name, const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn);
    // A value the graph holds (shared, not copied).
    VarNode* constant(DeviceTensor value, std::string name = {});
    // Applies a copy of `op` to `inputs` (vars of this graph, on one comp node) and returns its
    // output vars with their inferred layouts and, for shape-computing ops, host values
    // (value_infer.h). An output whose shape depends on data is dynamic (VarNode::shape_dynamic),
    // and so is every output of an op reading a dynamic var. Errors keep the layout rule's type
    // (ShapeError, DTypeError, ParamError, ...) and name the op, its params and the inputs.
    const std::vector<VarNode*>& insert(const OpDef& op, std::span<VarNode* const> inputs,
                                        const InsertOptions& options = {});
    const std::vector<VarNode*>& insert(const OpDef& op, std::initializer_list<VarNode*> inputs,
                                        const InsertOptions& options = {}) {
        return insert(op, std::span<VarNode* const>(inputs.begin(), inputs.size()), options);
    }
    // insert() for an op with exactly one output.
    VarNode* insert1(const OpDef& op, std::span<VarNode* const> inputs,
                     const InsertOptions& options = {});
    VarNode* insert1(const OpDef& op, std::initializer_list<VarNode*> inputs,
                     const InsertOptions& options = {}) {
        return insert1(op, std::span<VarNode* const>(inputs.begin(), inputs.size()), options);
    }

    // Makes every reader of `from` read `to` instead (a pass's rewrite). Both must be vars of
    // this graph with equal layouts on one comp node, and `to` must not depend on `from`: that
    // would make a cycle (ParamError).
    void replace_var(VarNode* from, VarNode* to);
    // Removes an operator node whose outputs nobody reads, or an input or constant var nobody
    // reads; ParamError otherwise. Pointers to the removed nodes dangle.
    void erase(OperatorNode* node);
    // Schedules `node` where `replaced` ran (a pass's rewrite): without it the new node, the
    // youngest, would run after every older ready node, e.g. after a data-parallel step's
    // all-reduce waits instead of within backward.
    void take_place_of(OperatorNode* node, const OperatorNode* replaced);
    void erase(VarNode* var);

    bool owns(const VarNode* var) const;
    bool owns(const OperatorNode* node) const;
    // Vars in creation order.
    std::vector<VarNode*> vars() const;
    // Operator nodes in a topological order (inputs before readers; creation order where free).
    std::vector<OperatorNode*> topo_order() const;
    // Operator nodes that `outputs` need, in topological order; ParamError for a var that is
    // null or not of this graph.
    std::vector<OperatorNode*> topo_order(std::span<VarNode* const> outputs) const;

    // The graph as text, one node a line, e.g.
    //   %0 'x' = input : {2,3} float32 @cpu0
    //   %2 = Elemwise(mode=ADD)(%0, %1) : {2,3} float32
    //   outputs: %2
    // With `outputs`, only what they need, and an outputs line.
    std::string dump(std::span<VarNode* const> outputs = {}) const;

    // A new graph holding what `outputs` need: the inputs and constants read (constants share
    // their values), fresh copies of the ops, the vars' names. `outputs` become their copies.
    // Layouts, host values and dynamic shapes are inferred again: a shape that was dynamic where
    // an input was not yet a constant (a trace's recording) can be static in the copy.
    // ParamError for an output that is null or not a var of this graph.
    std::unique_ptr<ComputingGraph> copy(std::vector<VarNode*>& outputs) const;

    // Compiles what `outputs` need: copies it (the graph itself stays as it is), runs the passes
    // the options ask for, plans memory. ParamError for no outputs, or an output that is null or
    // not a var of this graph.
    std::unique_ptr<Executable> compile(std::span<VarNode* const> outputs,
                                        const CompileOptions& options = {}) const;
    std::unique_ptr<Executable> compile(std::initializer_list<VarNode*> outputs,
                                        const CompileOptions& options = {}) const {
        return compile(std::span<VarNode* const>(outputs.begin(), outputs.size()), options);
    }

private:
    // Adds a node whose output layouts are known (insert() inferred them, or compile() copies).
    OperatorNode* insert_node(std::shared_ptr<const OpDef> op, std::span<VarNode* const> inputs,
                              CompNode cn, std::span<const dnn::TensorLayout> out_layouts);
    // insert() after its checks: infers layouts (`presets`: output shapes, or empty), dynamic
    // shapes and host values, and adds the node.
    OperatorNode* insert_inferred(std::shared_ptr<OpDef> op, std::span<VarNode* const> inputs,
                                  CompNode cn, std::vector<dnn::TensorShape> presets);
    // Computes the outputs' host values when value_infer.h says the graph knows them.
    void infer_host_values(OperatorNode* node);
    VarNode* new_var(VarNode::Kind kind, const dnn::TensorLayout& layout, CompNode cn);
    void check_owned(const VarNode* var, const char* what, size_t index) const;

    struct Nodes;
    std::unique_ptr<Nodes> m_nodes;
    size_t m_next_var_id = 0;
    size_t m_next_op_id = 0;
};

}  // namespace neomeg::graph
