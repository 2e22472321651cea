// ComputingGraph::dump: the graph as text, for tests of the passes and for debugging.
#include <sstream>
#include <unordered_set>

#include "neomeg/graph/graph.h"

namespace neomeg::graph {
namespace {

std::string type_str(const VarNode* v) {
    return v->shape().to_string() + " " + v->dtype().name() +
           (v->shape_dynamic() ? " dynamic" : "");
}

// A small constant's values, so a dump shows what folding computed.
std::string const_values(const VarNode* v) {
    constexpr size_t kMaxShown = 6;
    size_t n = v->shape().total_nr_elems();
    if (n > kMaxShown || !v->value().comp_node().valid() ||
        v->value().comp_node().device_type() != CompNode::DeviceType::CPU)
        return "";
    std::ostringstream os;
    os << " [";
    if (v->dtype() == dnn::dtype::Float32) {
        std::vector<float> xs(n);
        v->value().to_host(xs.data());
        for (size_t i = 0; i < n; ++i)
            os << (i ? ", " : "") << xs[i];
    } else if (v->dtype() == dnn::dtype::Int32) {
        std::vector<int32_t> xs(n);
        v->value().to_host(xs.data());
        for (size_t i = 0; i < n; ++i)
            os << (i ? ", " : "") << xs[i];
    } else {
        return "";
    }
    os << "]";
    return os.str();
}

}  // namespace

std::string ComputingGraph::dump(std::span<VarNode* const> outputs) const {
    std::vector<OperatorNode*> ops = outputs.empty() ? topo_order() : topo_order(outputs);
    std::unordered_set<const VarNode*> used(outputs.begin(), outputs.end());
    for (OperatorNode* op : ops)
        used.insert(op->inputs().begin(), op->inputs().end());
    std::ostringstream os;
    for (VarNode* v : vars()) {
        if (v->kind() == VarNode::Kind::Computed || (!outputs.empty() && !used.count(v)))
            continue;
        bool is_input = v->kind() == VarNode::Kind::Input;
        os << v->str() << " = " << (is_input ? "input" : "const")
           << (is_input ? "" : const_values(v)) << " : " << type_str(v) << " @"
           << v->comp_node().to_string() << "\n";
    }
    for (OperatorNode* op : ops) {
        for (size_t i = 0; i < op->outputs().size(); ++i)
            os << (i ? ", " : "") << op->outputs()[i]->str();
        os << " = " << op->op().to_string() << "(";
        for (size_t i = 0; i < op->inputs().size(); ++i)
            os << (i ? ", " : "") << '%' << op->inputs()[i]->id();
        os << ") : ";
        for (size_t i = 0; i < op->outputs().size(); ++i)
            os << (i ? ", " : "") << type_str(op->outputs()[i]);
        os << "\n";
    }
    if (!outputs.empty()) {
        os << "outputs:";
        for (VarNode* v : outputs)
            os << " %" << v->id();
        os << "\n";
    }
    return os.str();
}

}  // namespace neomeg::graph
