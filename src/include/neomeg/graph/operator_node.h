// An OperatorNode applies one registry op (neomeg/op/op_def.h) to input vars on one comp node.
// It owns its op object: the op's cached kernels and plans belong to this node alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "neomeg/op/op_def.h"

namespace neomeg::graph {

class ComputingGraph;
class VarNode;

class OperatorNode {
public:
    OperatorNode(const OperatorNode&) = delete;
    OperatorNode& operator=(const OperatorNode&) = delete;

    ComputingGraph* graph() const { return m_graph; }
    // Unique within the graph and increasing in creation order.
    size_t id() const { return m_id; }
    // Where the node runs among nodes that are ready at once (topo_order): its id, or the
    // place of the node a rewrite made it replace (ComputingGraph::take_place_of).
    size_t order() const { return m_order; }
    const OpDef& op() const { return *m_op; }
    const std::vector<VarNode*>& inputs() const { return m_inputs; }
    const std::vector<VarNode*>& outputs() const { return m_outputs; }
    CompNode comp_node() const { return m_cn; }

private:
    friend class ComputingGraph;
    OperatorNode() = default;

    ComputingGraph* m_graph = nullptr;
    size_t m_id = 0;
    size_t m_order = 0;
    std::shared_ptr<const OpDef> m_op;
    std::vector<VarNode*> m_inputs;
    std::vector<VarNode*> m_outputs;
    CompNode m_cn;
};

}  // namespace neomeg::graph
