// A VarNode is a tensor-valued edge of a ComputingGraph: a placeholder the caller feeds
// (input), a value the graph holds (constant), or an output of an operator node. Its layout
// (shape and dtype) is contiguous and inferred when the node producing it is inserted: static,
// unless it depends on data (value_infer.h), when the layout holds a stand-in of the right rank
// and dtype and the executable infers the shape at run time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "neomeg/core/device_tensor.h"

namespace neomeg::graph {

class ComputingGraph;
class OperatorNode;

class VarNode {
public:
    enum class Kind : uint8_t { Input, Const, Computed };

    VarNode(const VarNode&) = delete;
    VarNode& operator=(const VarNode&) = delete;

    ComputingGraph* graph() const { return m_graph; }
    // Unique within the graph and increasing in creation order.
    size_t id() const { return m_id; }
    Kind kind() const { return m_kind; }
    const std::string& name() const { return m_name; }
    void set_name(std::string name) { m_name = std::move(name); }

    const dnn::TensorLayout& layout() const { return m_layout; }
    const dnn::TensorShape& shape() const { return m_layout; }
    dnn::DType dtype() const { return m_layout.dtype; }
    CompNode comp_node() const { return m_cn; }
    // The shape is known only at run time (it depends on data); layout() is a stand-in.
    bool shape_dynamic() const { return m_dynamic; }
    // The var's value when the graph knows it before running (value_infer.h): a small tensor in
    // host memory; null otherwise.
    const DeviceTensor* host_value() const {
        return m_host_value.valid() ? &m_host_value : nullptr;
    }

    // The operator node computing this var and which of its outputs it is; null for an input
    // or a constant.
    OperatorNode* owner() const { return m_owner; }
    size_t owner_index() const { return m_owner_index; }
    // A constant's value (invalid for other kinds).
    const DeviceTensor& value() const { return m_value; }
    // Operator nodes reading this var, once per input slot that reads it.
    const std::vector<OperatorNode*>& users() const { return m_users; }

    // "%3" or "%3 'name'", as dumps and errors show it.
    std::string str() const;

private:
    friend class ComputingGraph;
    VarNode() = default;

    ComputingGraph* m_graph = nullptr;
    size_t m_id = 0;
    Kind m_kind = Kind::Computed;
    std::string m_name;
    dnn::TensorLayout m_layout;
    CompNode m_cn;
    OperatorNode* m_owner = nullptr;
    size_t m_owner_index = 0;
    DeviceTensor m_value;
    DeviceTensor m_host_value;
    bool m_dynamic = false;
    std::vector<OperatorNode*> m_users;
};

}  // namespace neomeg::graph
