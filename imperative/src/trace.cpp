#include "neomeg/imperative/trace.h"

#include <sstream>

#include "neomeg/dnn/errors.h"

namespace neomeg::imperative {

namespace {

thread_local TraceRecorder* t_current = nullptr;

std::string shapes_str(std::span<const dnn::TensorLayout> layouts) {
    std::string s = "(";
    for (size_t i = 0; i < layouts.size(); ++i) {
        if (i)
            s += ", ";
        s += layouts[i].TensorShape::to_string() + " " + layouts[i].dtype.name();
    }
    return s + ")";
}

// A graph constant's value: a contiguous copy on the tensor's comp node.
DeviceTensor device_copy(const Tensor& t) {
    Tensor c = t.contiguous();
    return DeviceTensor::copy_of(c.dnn_tensor().raw_ptr(), c.shape(), c.dtype(), c.comp_node());
}

std::vector<dnn::TensorLayout> layouts_of(std::span<const Tensor> ts) {
    std::vector<dnn::TensorLayout> out;
    out.reserve(ts.size());
    for (auto& t : ts)
        out.push_back(t.layout());
    return out;
}

bool same_shapes(std::span<const dnn::TensorLayout> a, std::span<const dnn::TensorLayout> b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].eq_shape(b[i]) || a[i].dtype != b[i].dtype)
            return false;
    return true;
}

// An op keyed by a seed param (the RNGs, DropoutForward): Python draws a new seed for each
// call. A recorded one is a graph node whose seed the replay sets anew each run
// (Executable::set_seed, from the keys the generators draw then, see megengine.jit.trace).
bool is_random(const OpDef& op) {
    return op.kind() == OpKind::Dnn && op.seed().has_value();
}

// The same op and params; a random op's seed, drawn anew by every call, aside.
bool same_op(const OpDef& a, const OpDef& b) {
    if (!is_random(a))
        return a.is_same(b);
    auto a0 = a.clone(), b0 = b.clone();
    for (auto* o : {a0.get(), b0.get()})
        o->set_param_field("seed", ParamValue(uint64_t(0)));
    return a0->is_same(*b0);
}

}  // namespace

bool TraceRecorder::Key::operator==(const Key& rhs) const {
    return storage == rhs.storage && ptr == rhs.ptr && layout.eq_layout(rhs.layout);
}

size_t TraceRecorder::KeyHash::operator()(const Key& k) const {
    size_t h = std::hash<const void*>()(k.ptr);
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(static_cast<size_t>(k.storage));
    mix(k.layout.ndim);
    for (size_t i = 0; i < k.layout.ndim; ++i) {
        mix(k.layout.shape[i]);
        mix(static_cast<size_t>(k.layout.stride[i]));
    }
    mix(k.layout.dtype.hash());
    return h;
}

TraceRecorder::Key TraceRecorder::key_of(const Tensor& t) {
    const dnn::TensorND nd = t.dnn_tensor();
    return {nd.storage ? nd.storage->id() : 0, static_cast<const std::byte*>(nd.raw_ptr()),
            t.layout()};
}

bool TraceRecorder::any_active() {
    return t_current != nullptr;
}

TraceRecorder* TraceRecorder::current() {
    return t_current;
}

TraceRecorder::TraceRecorder(LocationFn location)
    : m_location(location), m_graph(std::make_unique<graph::ComputingGraph>()) {}

TraceRecorder::~TraceRecorder() {
    if (t_current == this)
        t_current = nullptr;
}

void TraceRecorder::activate(Mode mode) {
    NM_THROW_IF(t_current && t_current != this, ParamError,
                "trace: another trace is recording on this thread (traces do not nest)");
    t_current = this;
    m_mode = mode;
    m_excluded = 0;
    m_check_pos = 0;
}

void TraceRecorder::deactivate() {
    if (t_current == this)
        t_current = nullptr;
}

void TraceRecorder::end_excluded() {
    NM_THROW_IF(m_excluded == 0, ParamError, "trace: exclude_from_trace exited more than entered");
    --m_excluded;
}

void TraceRecorder::bind(const Tensor& t, graph::VarNode* var) {
    const Key key = key_of(t);
    m_vars[key] = var;
    if (key.storage == 0)
        m_alive.push_back(t.detach());
}

graph::VarNode* TraceRecorder::add_input(const Tensor& t, std::string name) {
    auto* var = m_graph->input(std::move(name), t.shape(), t.dtype(), t.comp_node());
    bind(t, var);
    return var;
}

graph::VarNode* TraceRecorder::var_of(const Tensor& t) const {
    auto it = m_vars.find(key_of(t));
    return it == m_vars.end() ? nullptr : it->second;
}

void TraceRecorder::note_same_value(const Tensor& original, const Tensor& copy) {
    if (m_mode != Mode::Record || excluded())
        return;
    if (auto* var = var_of(original))
        bind(copy, var);
}

void TraceRecorder::note_same_value_if_recording(const Tensor& original, const Tensor& copy) {
    if (t_current)
        t_current->note_same_value(original, copy);
}

graph::VarNode* TraceRecorder::var_or_constant(const Tensor& t) {
    if (auto* var = var_of(t))
        return var;
    auto* var = m_graph->constant(device_copy(t));
    bind(t, var);
    return var;
}

graph::VarNode* TraceRecorder::freeze_external(size_t index) {
    NM_THROW_IF(index >= m_externals.size(), ParamError, "trace: external ", index,
                " out of range; there are ", m_externals.size());
    External& ext = m_externals[index];
    if (ext.var->kind() == graph::VarNode::Kind::Const)
        return ext.var;
    NM_THROW_IF(!ext.value.valid(), ParamError, "trace: external ", index,
                " was released: its value is the holder's to give");
    graph::VarNode* constant = m_graph->constant(device_copy(ext.value), ext.var->name());
    m_graph->replace_var(ext.var, constant);
    m_graph->erase(ext.var);
    m_vars[ext.key] = constant;
    ext.var = constant;
    return constant;
}

void TraceRecorder::release_external(const Tensor& t) {
    graph::VarNode* var = var_of(t);
    if (!var)
        return;
    for (auto& ext : m_externals)
        if (ext.var == var)
            ext.value = Tensor();
}

void TraceRecorder::on_apply(const OpDef& op, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs,
                             std::span<const dnn::TensorShape> shapes) {
    if (m_excluded || !m_failure.empty())
        return;
    if (m_mode == Mode::Check) {
        check(op, inputs);
        return;
    }
    try {
        record(op, inputs, outputs, shapes);
    } catch (const std::exception& e) {
        // The eager result stands; only the recording ends.
        m_failure = e.what();
    }
}

void TraceRecorder::record(const OpDef& op, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs,
                           std::span<const dnn::TensorShape> shapes) {
    std::string where = location();
    if (const auto* custom = dynamic_cast<const CustomOpDef*>(&op);
        op.kind() == OpKind::Custom && !(custom && custom->graph_capable()))
        throw TraceMismatch(std::string(op.name()) + " at " + where +
                            " runs only eagerly (a Python autodiff.Function) and cannot be "
                            "recorded into a graph");
    std::vector<graph::VarNode*> in_vars;
    in_vars.reserve(inputs.size());
    OpRecord rec{op.clone(), std::move(where), layouts_of(inputs), {}};
    for (auto& t : inputs) {
        graph::VarNode* var = var_of(t);
        if (!var) {
            var = m_graph->input("external_" + std::to_string(m_externals.size()), t.shape(),
                                 t.dtype(), t.comp_node());
            bind(t, var);
            m_externals.push_back({var, key_of(t), t.detach()});
        }
        in_vars.push_back(var);
        rec.input_vars.push_back(var->id());
    }
    graph::InsertOptions options;
    options.output_shapes.assign(shapes.begin(), shapes.end());
    if (inputs.empty() && !outputs.empty())
        options.comp_node = outputs[0].comp_node();
    const std::vector<graph::VarNode*>* inserted = nullptr;
    try {
        inserted = &m_graph->insert(op, in_vars, options);
    } catch (const std::exception& e) {
        throw TraceMismatch(op.to_string() + " at " + rec.location + ": " + e.what());
    }
    const auto& out_vars = *inserted;
    NM_THROW_IF(out_vars.size() != outputs.size(), ParamError, "trace: ", op.to_string(), " gave ",
                outputs.size(), " outputs eagerly and ", out_vars.size(), " in the graph");
    for (size_t i = 0; i < outputs.size(); ++i) {
        NM_THROW_IF(!out_vars[i]->shape().eq_shape(outputs[i].shape()) ||
                            out_vars[i]->dtype() != outputs[i].dtype(),
                    ParamError, "trace: ", op.to_string(), " output ", i, " is ",
                    outputs[i].layout().to_string(), " eagerly but ",
                    out_vars[i]->layout().to_string(), " in the graph");
        bind(outputs[i], out_vars[i]);
    }
    m_ops.push_back(std::move(rec));
}

void TraceRecorder::check(const OpDef& op, std::span<const Tensor> inputs) {
    std::string where = location();
    auto layouts = layouts_of(inputs);
    if (m_check_pos >= m_ops.size()) {
        throw TraceMismatch("trace: the call runs " + op.to_string() + shapes_str(layouts) +
                            " at " + where + ", but the recording ended after " +
                            std::to_string(m_ops.size()) + " ops");
    }
    const OpRecord& rec = m_ops[m_check_pos];
    if (!same_op(op, *rec.op) || !same_shapes(layouts, rec.input_layouts)) {
        throw TraceMismatch("trace: op " + std::to_string(m_check_pos) +
                            " diverged: the call runs " + op.to_string() + shapes_str(layouts) +
                            " at " + where + ", the recording ran " + rec.op->to_string() +
                            shapes_str(rec.input_layouts) + " at " + rec.location);
    }
    ++m_check_pos;
}

void TraceRecorder::fail(const std::string& why) {
    if (m_excluded || m_mode != Mode::Record || !m_failure.empty())
        return;
    m_failure = why + " at " + location();
}

void TraceRecorder::on_generator(const OpDef& op, std::span<const Tensor> outputs,
                                 std::span<const dnn::TensorShape> shapes, CompNode cn) {
    if (m_excluded || m_mode != Mode::Record || !m_failure.empty() || !is_random(op))
        return;
    // A random generator becomes a node of its own (no inputs), which the replays reseed; the
    // others (Fill, Eye) give the same values every call, constants where the graph uses them.
    // Generators are not in the op list that check mode compares, recorded or not.
    try {
        graph::InsertOptions options;
        options.output_shapes.assign(shapes.begin(), shapes.end());
        options.comp_node = cn;
        const auto& out_vars = m_graph->insert(op, {}, options);
        NM_THROW_IF(out_vars.size() != outputs.size(), ParamError, "trace: ", op.to_string(),
                    " gave ", outputs.size(), " outputs eagerly and ", out_vars.size(),
                    " in the graph");
        for (size_t i = 0; i < outputs.size(); ++i)
            bind(outputs[i], out_vars[i]);
    } catch (const std::exception& e) {
        m_failure = op.to_string() + " at " + location() + ": " + e.what();
    }
}

void TraceRecorder::drop_tensors() {
    m_vars.clear();
    m_alive.clear();
    m_alive.shrink_to_fit();
    for (auto& ext : m_externals)
        ext.value = Tensor();
}

void TraceRecorder::finish_check() const {
    if (m_check_pos < m_ops.size()) {
        const OpRecord& rec = m_ops[m_check_pos];
        throw TraceMismatch("trace: the call ran " + std::to_string(m_check_pos) +
                            " ops, the recording " + std::to_string(m_ops.size()) +
                            "; the first op missing is " + rec.op->to_string() +
                            shapes_str(rec.input_layouts) + " at " + rec.location);
    }
}

}  // namespace neomeg::imperative
