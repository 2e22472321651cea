#include "neomeg/graph/graph.h"

#include <algorithm>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "neomeg/dnn/errors.h"
#include "neomeg/graph/value_infer.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "rethrow.h"

namespace neomeg::graph {

struct ComputingGraph::Nodes {
    std::vector<std::unique_ptr<VarNode>> vars;
    std::vector<std::unique_ptr<OperatorNode>> ops;
    std::unordered_set<const VarNode*> var_set;
    std::unordered_set<const OperatorNode*> op_set;
};

namespace {

std::string inputs_str(std::span<VarNode* const> inputs) {
    std::ostringstream os;
    os << '[';
    for (size_t i = 0; i < inputs.size(); ++i)
        os << (i ? ", " : "") << inputs[i]->str() << ' ' << inputs[i]->shape().to_string()
           << (inputs[i]->shape_dynamic() ? " (dynamic)" : "") << ' ' << inputs[i]->dtype().name();
    os << ']';
    return os.str();
}

}  // namespace

std::string VarNode::str() const {
    std::ostringstream os;
    os << '%' << m_id;
    if (!m_name.empty())
        os << " '" << m_name << "'";
    return os.str();
}

ComputingGraph::ComputingGraph() : m_nodes(std::make_unique<Nodes>()) {}
ComputingGraph::~ComputingGraph() = default;

VarNode* ComputingGraph::new_var(VarNode::Kind kind, const dnn::TensorLayout& layout, CompNode cn) {
    std::unique_ptr<VarNode> v(new VarNode());
    v->m_graph = this;
    v->m_id = m_next_var_id++;
    v->m_kind = kind;
    v->m_layout = layout;
    v->m_cn = cn;
    VarNode* raw = v.get();
    m_nodes->vars.push_back(std::move(v));
    m_nodes->var_set.insert(raw);
    return raw;
}

void ComputingGraph::check_owned(const VarNode* var, const char* what, size_t index) const {
    NM_THROW_IF(!var, ParamError, what, " ", index, " is null");
    NM_THROW_IF(!owns(var), ParamError, what, " ", index, " (", var->str(),
                ") is not a var of this graph");
}

VarNode* ComputingGraph::input(std::string name, const dnn::TensorShape& shape, dnn::DType dtype,
                               CompNode cn) {
    NM_THROW_IF(!cn.valid(), ParamError, "input '", name, "': invalid comp node");
    VarNode* v = new_var(VarNode::Kind::Input, dnn::TensorLayout(shape, dtype), cn);
    v->m_name = std::move(name);
    return v;
}

VarNode* ComputingGraph::constant(DeviceTensor value, std::string name) {
    NM_THROW_IF(!value.valid(), ParamError, "constant '", name, "': invalid value");
    VarNode* v = new_var(VarNode::Kind::Const, value.layout(), value.comp_node());
    v->m_name = std::move(name);
    v->m_value = std::move(value);
    if (v->m_value.comp_node().device_type() == CompNode::DeviceType::CPU &&
        v->shape().total_nr_elems() <= kMaxHostValueElems)
        v->m_host_value = v->m_value;
    return v;
}

const std::vector<VarNode*>& ComputingGraph::insert(const OpDef& op,
                                                    std::span<VarNode* const> inputs,
                                                    const InsertOptions& options) {
    for (size_t i = 0; i < inputs.size(); ++i)
        check_owned(inputs[i], (op.to_string() + ": input").c_str(), i);
    CompNode cn = inputs.empty() ? options.comp_node : inputs[0]->comp_node();
    NM_THROW_IF(!cn.valid(), ParamError, op.to_string(),
                ": an op without inputs needs InsertOptions::comp_node");
    for (size_t i = 0; i < inputs.size(); ++i)
        NM_THROW_IF(inputs[i]->comp_node() != cn, ParamError, op.to_string(), ": input ", i,
                    " is on ", inputs[i]->comp_node().to_string(), " but input 0 is on ",
                    cn.to_string());

    return insert_inferred(op.clone(), inputs, cn, options.output_shapes)->m_outputs;
}

OperatorNode* ComputingGraph::insert_inferred(std::shared_ptr<OpDef> op,
                                              std::span<VarNode* const> inputs, CompNode cn,
                                              std::vector<dnn::TensorShape> presets) {
    const OpDef* raw = op.get();  // for the message: the node may own it by then
    OperatorNode* node = nullptr;
    try {
        std::vector<dnn::TensorLayout> in_layouts;
        in_layouts.reserve(inputs.size());
        bool dynamic = false;
        for (VarNode* v : inputs) {
            in_layouts.push_back(v->layout());
            dynamic |= v->m_dynamic;
        }
        if (auto vi = shape_value_input(*op); vi && *vi < inputs.size()) {
            const DeviceTensor* value = inputs[*vi]->host_value();
            if (!dynamic && value && value->dtype() == dnn::dtype::Int32 &&
                value->shape().ndim <= 1) {
                const auto* p = reinterpret_cast<const int32_t*>(value->raw_ptr());
                presets = shapes_from_value(*op, in_layouts, {p, value->shape().total_nr_elems()});
            } else {
                // Known only at run time; a caller's presets (what an eager run found) or a
                // stand-in of the right rank meanwhile.
                dynamic = true;
                if (presets.empty())
                    presets = sample_shapes(*op, in_layouts);
            }
        }
        auto out_layouts = op->infer_layouts(cn, in_layouts, presets);
        node = insert_node(std::move(op), inputs, cn, out_layouts);
        for (VarNode* out : node->m_outputs)
            out->m_dynamic = dynamic;
        if (!dynamic)
            infer_host_values(node);
        return node;
    } catch (const dnn::Error&) {
        std::string context = dnn::str_cat("ComputingGraph::insert: ", raw->to_string(),
                                           " on inputs ", inputs_str(inputs), ": ");
        if (node)  // its host values failed: no half-inserted node stays
            erase(node);
        rethrow_with_context(context);
    }
}

void ComputingGraph::infer_host_values(OperatorNode* node) {
    const OpDef& op = node->op();
    CompNode cn = node->comp_node();
    if (!computes_host_value(op) || cn.device_type() != CompNode::DeviceType::CPU)
        return;
    for (VarNode* out : node->m_outputs)
        if (out->shape().total_nr_elems() > kMaxHostValueElems)
            return;
    // GetVarShape reads only its input's layout, which is static here.
    bool layout_only = op.id() == ops::GetVarShape::kId;
    std::vector<dnn::TensorND> in_nd;
    std::vector<dnn::TensorLayout> in_layouts, out_layouts;
    for (VarNode* in : node->m_inputs) {
        if (!layout_only && !in->host_value())
            return;
        in_nd.emplace_back(layout_only ? nullptr : in->m_host_value.raw_ptr(), in->layout());
        in_layouts.push_back(in->layout());
    }
    std::vector<DeviceTensor> values;
    std::vector<dnn::TensorND> out_nd;
    for (VarNode* out : node->m_outputs) {
        values.push_back(DeviceTensor::empty(out->shape(), out->dtype(), cn));
        out_nd.push_back(values.back().as_nd());
        out_layouts.push_back(out->layout());
    }
    size_t ws_size = op.workspace_in_bytes(cn, in_layouts, out_layouts);
    DeviceTensor ws;
    if (ws_size)
        ws = DeviceTensor::empty({ws_size}, dnn::dtype::Uint8, cn);
    op.exec(cn, in_nd, out_nd, {ws_size ? ws.raw_ptr() : nullptr, ws_size});
    cn.sync();
    for (size_t i = 0; i < values.size(); ++i)
        node->m_outputs[i]->m_host_value = std::move(values[i]);
}

OperatorNode* ComputingGraph::insert_node(std::shared_ptr<const OpDef> op,
                                          std::span<VarNode* const> inputs, CompNode cn,
                                          std::span<const dnn::TensorLayout> out_layouts) {
    std::unique_ptr<OperatorNode> node(new OperatorNode());
    node->m_graph = this;
    node->m_id = m_next_op_id++;
    node->m_order = node->m_id;
    node->m_op = std::move(op);
    node->m_inputs.assign(inputs.begin(), inputs.end());
    node->m_cn = cn;
    for (size_t i = 0; i < out_layouts.size(); ++i) {
        // Layout rules may leave broadcast or custom strides; a graph var is contiguous.
        VarNode* v = new_var(VarNode::Kind::Computed,
                             dnn::TensorLayout(out_layouts[i], out_layouts[i].dtype), cn);
        v->m_owner = node.get();
        v->m_owner_index = i;
        node->m_outputs.push_back(v);
    }
    for (VarNode* v : inputs)
        v->m_users.push_back(node.get());
    OperatorNode* raw = node.get();
    m_nodes->ops.push_back(std::move(node));
    m_nodes->op_set.insert(raw);
    return raw;
}

VarNode* ComputingGraph::insert1(const OpDef& op, std::span<VarNode* const> inputs,
                                 const InsertOptions& options) {
    const auto& outs = insert(op, inputs, options);
    NM_THROW_IF(outs.size() != 1, ParamError, op.to_string(), ": insert1 needs an op with one ",
                "output, this one has ", outs.size(), " (use insert)");
    return outs[0];
}

void ComputingGraph::replace_var(VarNode* from, VarNode* to) {
    check_owned(from, "replace_var: var", 0);
    check_owned(to, "replace_var: var", 1);
    if (from == to)
        return;
    NM_THROW_IF(!from->layout().eq_layout(to->layout()) || from->comp_node() != to->comp_node(),
                ParamError, "replace_var: ", from->str(), " ", from->layout().to_string(), " @",
                from->comp_node().to_string(), " cannot be replaced by ", to->str(), " ",
                to->layout().to_string(), " @", to->comp_node().to_string());
    // `to` depending on `from` would make its own producers read it: a cycle.
    std::vector<const VarNode*> stack{to};
    std::unordered_set<const VarNode*> seen;
    while (!stack.empty()) {
        const VarNode* v = stack.back();
        stack.pop_back();
        NM_THROW_IF(v == from, ParamError, "replace_var: ", to->str(), " depends on ", from->str(),
                    "; replacing one by the other would make a cycle");
        if (!seen.insert(v).second || !v->owner())
            continue;
        for (VarNode* in : v->owner()->inputs())
            stack.push_back(in);
    }
    for (OperatorNode* user : from->m_users) {
        for (VarNode*& in : user->m_inputs)
            if (in == from)
                in = to;
        to->m_users.push_back(user);
    }
    from->m_users.clear();
}

void ComputingGraph::take_place_of(OperatorNode* node, const OperatorNode* replaced) {
    NM_THROW_IF(!node || !owns(node) || !replaced || !owns(replaced), ParamError,
                "take_place_of: not operator nodes of this graph");
    node->m_order = replaced->m_order;
}

void ComputingGraph::erase(OperatorNode* node) {
    NM_THROW_IF(!node || !owns(node), ParamError, "erase: not an operator node of this graph");
    for (VarNode* out : node->m_outputs)
        NM_THROW_IF(!out->m_users.empty(), ParamError, "erase: output ", out->str(), " of ",
                    node->op().to_string(), " still has readers");
    for (VarNode* in : node->m_inputs) {
        auto& users = in->m_users;
        users.erase(std::find(users.begin(), users.end(), node));
    }
    for (VarNode* out : node->m_outputs) {
        m_nodes->var_set.erase(out);
        std::erase_if(m_nodes->vars, [&](const auto& p) { return p.get() == out; });
    }
    m_nodes->op_set.erase(node);
    std::erase_if(m_nodes->ops, [&](const auto& p) { return p.get() == node; });
}

void ComputingGraph::erase(VarNode* var) {
    check_owned(var, "erase: var", 0);
    NM_THROW_IF(var->kind() == VarNode::Kind::Computed, ParamError, "erase: ", var->str(),
                " is computed; erase its operator node");
    NM_THROW_IF(!var->m_users.empty(), ParamError, "erase: ", var->str(), " still has readers");
    m_nodes->var_set.erase(var);
    std::erase_if(m_nodes->vars, [&](const auto& p) { return p.get() == var; });
}

bool ComputingGraph::owns(const VarNode* var) const {
    return m_nodes->var_set.count(var) != 0;
}

bool ComputingGraph::owns(const OperatorNode* node) const {
    return m_nodes->op_set.count(node) != 0;
}

std::vector<VarNode*> ComputingGraph::vars() const {
    std::vector<VarNode*> out;
    out.reserve(m_nodes->vars.size());
    for (const auto& v : m_nodes->vars)
        out.push_back(v.get());
    return out;
}

std::vector<OperatorNode*> ComputingGraph::topo_order() const {
    std::vector<VarNode*> all;
    for (const auto& op : m_nodes->ops)
        for (VarNode* v : op->m_outputs)
            all.push_back(v);
    return topo_order(all);
}

std::vector<OperatorNode*> ComputingGraph::topo_order(std::span<VarNode* const> outputs) const {
    for (size_t i = 0; i < outputs.size(); ++i)
        check_owned(outputs[i], "output", i);
    // The nodes the outputs need...
    std::unordered_set<const OperatorNode*> needed;
    std::vector<OperatorNode*> stack;
    for (VarNode* v : outputs)
        if (v->owner() && needed.insert(v->owner()).second)
            stack.push_back(v->owner());
    std::vector<OperatorNode*> nodes;
    while (!stack.empty()) {
        OperatorNode* node = stack.back();
        stack.pop_back();
        nodes.push_back(node);
        for (VarNode* in : node->m_inputs)
            if (in->owner() && needed.insert(in->owner()).second)
                stack.push_back(in->owner());
    }
    // ...in Kahn's order, the earliest ready node first: creation order (or the place of the node
    // a rewrite replaced) unless a rewrite made a node read a younger one.
    std::unordered_map<const OperatorNode*, size_t> waiting;  // input slots not yet computed
    auto by_id = [](const OperatorNode* a, const OperatorNode* b) {
        return a->order() != b->order() ? a->order() > b->order() : a->id() > b->id();
    };
    std::priority_queue<OperatorNode*, std::vector<OperatorNode*>, decltype(by_id)> ready(by_id);
    for (OperatorNode* node : nodes) {
        size_t n = 0;
        for (VarNode* in : node->m_inputs)
            n += in->owner() != nullptr;
        waiting[node] = n;
        if (!n)
            ready.push(node);
    }
    std::vector<OperatorNode*> order;
    order.reserve(nodes.size());
    while (!ready.empty()) {
        OperatorNode* node = ready.top();
        ready.pop();
        order.push_back(node);
        for (VarNode* out : node->m_outputs)
            for (OperatorNode* user : out->m_users)
                if (needed.count(user) && --waiting[user] == 0)
                    ready.push(user);
    }
    // The public API cannot build a cycle; this guards the passes' rewrites.
    NM_THROW_IF(order.size() != nodes.size(), Error, "ComputingGraph: a cycle among ",
                nodes.size() - order.size(), " operator nodes");
    return order;
}

}  // namespace neomeg::graph
