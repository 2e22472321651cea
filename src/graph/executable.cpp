#include "neomeg/graph/executable.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "fused_elemwise.h"
#include "neomeg/graph/graph.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/dnn_op_def.h"
#include "neomeg/op/view_op_def.h"
#include "rethrow.h"
#include "schedule.h"
#include "step_profile.h"

namespace neomeg::graph {

Executable::Executable() = default;
Executable::~Executable() {
    if (!m_print_profile)
        return;
    std::vector<const OperatorNode*> nodes;
    for (const Step& step : m_steps)
        nodes.push_back(step.node);
    std::cerr << m_profile->summary(nodes);
}

namespace {

// Ops that read each input element only to compute the output element at the same index: an
// input of the output's layout may be overwritten as the op writes.
bool elementwise_in_place(const OperatorNode* node) {
    if (node->outputs().size() != 1)
        return false;
    return node->op().id() == ops::Elemwise::kId ||
           dynamic_cast<const FusedElemwise*>(&node->op()) != nullptr;
}

// A kernel-library op whose definition says its output is one of its inputs' elements in
// row-major order (forwards=..., ReshapeTo): its other inputs are read only for the static shape.
bool forwards_an_input(const OpDef& op) {
    return op.kind() == OpKind::Dnn &&
           static_cast<const DnnOpDefBase&>(op).forwarded_input() != dnn::kForwardsNothing;
}

// Readers that take `var` under `layout` (any strides, element 0 anywhere): kernel-library
// ops that do not forward an input (eager mode hands them such views); view ops that can express
// their view of it (a step copies it with Relayout; a forwarded one composes); and FusedElemwise
// (its blocks view each input by its strides). Not other custom ops (collectives send host buffers
// as dense) nor a dynamic step.
bool readers_take_views(const VarNode* var, const dnn::TensorLayout& layout) {
    for (const OperatorNode* user : var->users()) {
        for (const VarNode* out : user->outputs())
            if (out->shape_dynamic())
                return false;
        const OpDef& op = user->op();
        if ((op.kind() == OpKind::Dnn && !forwards_an_input(op)) ||
            dynamic_cast<const FusedElemwise*>(&op))
            continue;
        const auto* view = dynamic_cast<const ViewOpDefBase*>(&op);
        if (!view || !view->view_layout(layout))
            return false;
    }
    return true;
}

// An output planned as its first input's memory (no step, no copy): its layout there and its
// element 0, in elements from the input's; nullopt when the node runs as a step. `in` is the
// input's layout in the plan, strided where the input is itself such a view.
// - A kernel-library op that forwards its first input (forwards=..., ReshapeTo) of a contiguous
//   input: the same bytes under the output's shape.
// - A view op (Reshape, AddAxis, RemoveAxis, Subtensor, Dimshuffle, Broadcast) whose view of
//   `in` exists: when that view is contiguous any reader takes it (x[2:5], a reshape); when it
//   is strided (x[:, 1:3], x[::-1], a transpose, a broadcast with stride 0) only if every
//   reader takes such views (readers_take_views). A broadcast constant read by kernels is no
//   arena buffer of the whole shape: an embedding gradient starts from a broadcast zero, which
//   written into the arena cost a 30 MiB fill every run (BERT-mini).
std::optional<ViewLayout> forwarded_view(const OperatorNode* node, const dnn::TensorLayout& in) {
    if (node->inputs().empty() || node->outputs().size() != 1 ||
        node->outputs()[0]->shape_dynamic() || node->inputs()[0]->shape_dynamic())
        return std::nullopt;
    const VarNode* out = node->outputs()[0];
    if (in.dtype != out->dtype())
        return std::nullopt;
    if (node->op().kind() == OpKind::Dnn) {
        if (static_cast<const DnnOpDefBase&>(node->op()).forwarded_input() != 0 ||
            !in.is_contiguous() || in.access_bytes() != out->layout().access_bytes())
            return std::nullopt;
        return ViewLayout{out->layout(), 0};
    }
    const auto* view = dynamic_cast<const ViewOpDefBase*>(&node->op());
    if (!view)
        return std::nullopt;
    auto v = view->view_layout(in);
    if (!v || !v->layout.eq_shape(out->layout()))
        return std::nullopt;
    if (v->layout.is_contiguous() || readers_take_views(out, v->layout))
        return v;
    return std::nullopt;
}

}  // namespace

void Executable::build(std::unique_ptr<ComputingGraph> graph, std::vector<VarNode*> outputs,
                       bool reuse_inplace) {
    m_graph = std::move(graph);
    m_output_vars = std::move(outputs);
    std::unordered_set<const VarNode*> is_output(m_output_vars.begin(), m_output_vars.end());
    // Custom ops other than our fused elementwise kernels (megengine.distributed's collectives:
    // every rank must run them in the same order) and random ops keep their place.
    auto movable = [](const OperatorNode* node) {
        const OpDef& op = node->op();
        return !(op.kind() == OpKind::Custom && !dynamic_cast<const FusedElemwise*>(&op)) &&
               !op.seed();
    };
    // A node whose outputs all get fresh storage, with no workspace, takes nothing from the arena.
    auto takes_no_arena = [&](const OperatorNode* node) {
        if (!movable(node))
            return false;
        const OpDef& op = node->op();
        std::vector<dnn::TensorLayout> in_layouts, out_layouts;
        for (const VarNode* out : node->outputs()) {
            if (!is_output.count(out) || out->shape_dynamic())
                return false;
            out_layouts.push_back(out->layout());
        }
        for (const VarNode* in : node->inputs())
            in_layouts.push_back(in->layout());
        return !out_layouts.empty() &&
               op.workspace_in_bytes(node->comp_node(), in_layouts, out_layouts) == 0;
    };
    std::vector<OperatorNode*> order = run_source_nodes_late(
            run_arena_free_nodes_early(m_graph->topo_order(m_output_vars), takes_no_arena),
            movable);

    std::unordered_map<const VarNode*, size_t> slot_of;
    // The inputs in creation order are the executable's input slots.
    std::vector<VarNode*> leaves;
    for (OperatorNode* node : order)
        for (VarNode* in : node->inputs())
            if (in->kind() != VarNode::Kind::Computed)
                leaves.push_back(in);
    for (VarNode* v : m_output_vars)
        if (v->kind() != VarNode::Kind::Computed)
            leaves.push_back(v);
    std::sort(leaves.begin(), leaves.end(),
              [](const VarNode* a, const VarNode* b) { return a->id() < b->id(); });
    leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
    for (VarNode* v : leaves) {
        VarSlot slot;
        slot.layout = v->layout();
        if (v->kind() == VarNode::Kind::Input) {
            slot.source = VarSlot::Source::Input;
            slot.index = m_inputs.size();
            m_inputs.push_back({v->name(), v->layout(), v->comp_node()});
        } else {
            slot.source = VarSlot::Source::Const;
            slot.index = m_const_values.size();
            m_const_values.push_back(v->value());
        }
        slot_of[v] = m_vars.size();
        m_vars.push_back(slot);
    }
    m_input_values.resize(m_inputs.size());

    // Computed outputs get fresh storage every run; the first listing of a var owns it.
    for (VarNode* v : m_output_vars) {
        m_outputs.push_back({v->name(), v->layout(), v->comp_node(), v->shape_dynamic()});
        if (v->kind() == VarNode::Kind::Computed && !slot_of.count(v)) {
            slot_of[v] = m_vars.size();
            if (!v->shape_dynamic())
                m_fresh_outputs.push_back(m_vars.size());
            m_vars.push_back({VarSlot::Source::Output, m_outputs.size() - 1, 0, v->layout(),
                              v->shape_dynamic()});
        }
        m_output_var_slot.push_back(slot_of.at(v));
    }
    m_output_values.resize(m_outputs.size());

    // Every other computed var lives in its comp node's arena from its producer's step to its
    // last reader's; a workspace lives during its step.
    std::unordered_map<const VarNode*, size_t> last_read;
    for (size_t s = 0; s < order.size(); ++s)
        for (VarNode* in : order[s]->inputs())
            last_read[in] = s;
    auto arena_of = [&](CompNode cn) {
        for (size_t i = 0; i < m_arenas.size(); ++i)
            if (m_arenas[i].comp_node == cn)
                return i;
        m_arenas.push_back({cn, {}, {}});
        return m_arenas.size() - 1;
    };
    // Var slot -> its buffer in its arena, with in-place reuse and without: both are planned
    // and the smaller arena kept, as sharing a buffer lengthens its lifetime, which can leave
    // the greedy placement more fragmented than separate buffers.
    struct VarBuffers {
        size_t var, shared, own;
    };
    std::vector<VarBuffers> arena_var_buffer;
    std::vector<std::vector<BufferRequest>> own_buffers;   // per arena, one request per buffer
    std::unordered_map<const VarNode*, size_t> buffer_of;  // arena var -> its (shared) buffer
    std::unordered_map<const VarNode*, size_t> own_of;     // arena var -> its own buffer
    for (size_t s = 0; s < order.size(); ++s) {
        OperatorNode* node = order[s];
        if (std::optional<ViewLayout> view;
            !node->inputs().empty() && node->outputs().size() == 1 &&
            !slot_of.count(node->outputs()[0]) &&
            (view = forwarded_view(node, m_vars[slot_of.at(node->inputs()[0])].layout))) {
            // The output is the input's memory under its own layout, alive as long as either.
            VarNode *in = node->inputs()[0], *out = node->outputs()[0];
            VarSlot slot = m_vars[slot_of.at(in)];
            slot.layout = view->layout;
            slot.view_offset += view->offset * static_cast<ptrdiff_t>(in->dtype().size());
            slot_of[out] = m_vars.size();
            if (slot.source == VarSlot::Source::Arena) {
                auto it = last_read.find(out);
                size_t end = it == last_read.end() ? s : it->second;
                size_t shared = buffer_of.at(in), own = own_of.at(in);
                auto& buffers = m_arenas[slot.index].buffers;
                buffers[shared].end = std::max(buffers[shared].end, end);
                own_buffers[slot.index][own].end = std::max(own_buffers[slot.index][own].end, end);
                buffer_of[out] = shared;
                own_of[out] = own;
                arena_var_buffer.push_back({m_vars.size(), shared, own});
            }
            m_vars.push_back(slot);
            continue;
        }
        Step step;
        step.node = node;
        step.comp_node = node->comp_node();
        step.arena = arena_of(step.comp_node);
        std::vector<dnn::TensorLayout> in_layouts, out_layouts;
        for (VarNode* in : node->inputs()) {
            step.inputs.push_back(slot_of.at(in));
            in_layouts.push_back(m_vars[step.inputs.back()].layout);  // a broadcast's: strided
        }
        for (VarNode* out : node->outputs()) {
            step.dynamic |= out->shape_dynamic();
            if (!slot_of.count(out) && out->shape_dynamic()) {
                slot_of[out] = m_vars.size();
                m_vars.push_back({VarSlot::Source::Dynamic, m_dynamic_values.size(), 0,
                                  out->layout(), true});
                m_dynamic_values.emplace_back();
            } else if (!slot_of.count(out)) {
                auto it = last_read.find(out);
                size_t end = it == last_read.end() ? s : it->second;
                auto& buffers = m_arenas[step.arena].buffers;
                // In place: the buffer of an input that dies here (no var sharing it lives on),
                // if the op is elementwise and reads that buffer only as the output's memory
                // (element i where it writes element i; not a view at an offset, reversed or
                // transposed, which would read what this step already overwrote).
                size_t buffer = buffers.size();
                auto reads_as_output = [&](size_t b) {
                    for (VarNode* in : node->inputs()) {
                        auto found = buffer_of.find(in);
                        const VarSlot& v = m_vars[slot_of.at(in)];
                        if (found != buffer_of.end() && found->second == b &&
                            (v.view_offset != 0 || !v.layout.eq_layout(out->layout())))
                            return false;
                    }
                    return true;
                };
                if (reuse_inplace && elementwise_in_place(node))
                    for (VarNode* in : node->inputs()) {
                        auto b = buffer_of.find(in);
                        if (b != buffer_of.end() && buffers[b->second].end == s &&
                            reads_as_output(b->second)) {
                            buffer = b->second;
                            buffers[buffer].end = end;
                            break;
                        }
                    }
                if (buffer == buffers.size())
                    buffers.push_back({out->layout().access_bytes(), s, end});
                own_buffers.resize(m_arenas.size());
                auto& own = own_buffers[step.arena];
                slot_of[out] = m_vars.size();
                buffer_of[out] = buffer;
                own_of[out] = own.size();
                arena_var_buffer.push_back({m_vars.size(), buffer, own.size()});
                own.push_back({out->layout().access_bytes(), s, end});
                m_vars.push_back({VarSlot::Source::Arena, step.arena, 0, out->layout()});
            }
            step.outputs.push_back(slot_of.at(out));
            out_layouts.push_back(out->layout());
        }
        if (!step.dynamic)  // a dynamic step asks when it runs
            step.workspace_size =
                    node->op().workspace_in_bytes(step.comp_node, in_layouts, out_layouts);
        step.workspace_buffer = m_arenas[step.arena].buffers.size();
        m_arenas[step.arena].buffers.push_back({step.workspace_size, s, s});
        own_buffers.resize(m_arenas.size());
        step.own_workspace_buffer = own_buffers[step.arena].size();
        own_buffers[step.arena].push_back({step.workspace_size, s, s});
        step.in_nd.resize(step.inputs.size());
        step.out_nd.resize(step.outputs.size());
        m_steps.push_back(std::move(step));
    }

    own_buffers.resize(m_arenas.size());
    std::vector<bool> shares(m_arenas.size());
    for (size_t a = 0; a < m_arenas.size(); ++a) {
        Arena& arena = m_arenas[a];
        arena.plan = plan_memory(arena.buffers, CachingAllocator::kAlignment);
        MemoryPlan own = plan_memory(own_buffers[a], CachingAllocator::kAlignment);
        shares[a] = own.arena_bytes >= arena.plan.arena_bytes;
        if (!shares[a]) {
            arena.buffers = std::move(own_buffers[a]);
            arena.plan = std::move(own);
        }
        m_arena_blobs.push_back(
                arena.plan.arena_bytes
                        ? std::make_shared<Blob>(arena.comp_node, arena.plan.arena_bytes)
                        : nullptr);
    }
    for (const VarBuffers& v : arena_var_buffer) {
        size_t a = m_vars[v.var].index;
        m_vars[v.var].offset = m_arenas[a].plan.offsets[shares[a] ? v.shared : v.own];
    }
    if (StepProfile::enabled()) {
        m_profile = std::make_unique<StepProfile>(m_steps.size());
        m_print_profile = true;
    }
    for (Step& step : m_steps)
        step.workspace_offset =
                m_arenas[step.arena].plan.offsets[shares[step.arena] ? step.workspace_buffer
                                                                     : step.own_workspace_buffer];
}

size_t Executable::input_index(std::string_view name) const {
    for (size_t i = 0; i < m_inputs.size(); ++i)
        if (m_inputs[i].name == name)
            return i;
    std::string names;
    for (const Slot& s : m_inputs)
        names += (names.empty() ? "'" : ", '") + s.name + "'";
    throw dnn::ParamError(dnn::str_cat("Executable: no input named '", name,
                                       "' (the outputs need: ", names.empty() ? "none" : names,
                                       ")"));
}

void Executable::set_input(size_t index, DeviceTensor value) {
    NM_THROW_IF(index >= m_inputs.size(), ParamError, "Executable: input ", index,
                " out of range; there are ", m_inputs.size());
    const Slot& slot = m_inputs[index];
    NM_THROW_IF(!value.valid(), ParamError, "Executable: input '", slot.name,
                "' gets an invalid value");
    NM_THROW_IF(!value.layout().eq_shape(slot.layout) || value.dtype() != slot.layout.dtype,
                ParamError, "Executable: input '", slot.name, "' is ",
                slot.layout.TensorShape::to_string(), " ", slot.layout.dtype.name(), ", got ",
                value.shape().to_string(), " ", value.dtype().name());
    NM_THROW_IF(value.comp_node() != slot.comp_node, ParamError, "Executable: input '", slot.name,
                "' is on ", slot.comp_node.to_string(), ", got a value on ",
                value.comp_node().to_string());
    m_input_values[index] = std::move(value);
}

std::byte* Executable::var_ptr(const VarSlot& v) const {
    std::byte* base = nullptr;
    switch (v.source) {
        case VarSlot::Source::Arena: {
            const auto& blob = m_arena_blobs[v.index];
            base = blob ? blob->ptr() + v.offset : nullptr;
            break;
        }
        case VarSlot::Source::Input:
            base = m_input_values[v.index].raw_ptr();
            break;
        case VarSlot::Source::Const:
            base = m_const_values[v.index].raw_ptr();
            break;
        case VarSlot::Source::Dynamic:
            base = m_dynamic_values[v.index].raw_ptr();
            break;
        case VarSlot::Source::Output:
            base = m_output_values[v.index].raw_ptr();
            break;
    }
    return base ? base + v.view_offset : nullptr;
}

dnn::TensorND Executable::var_nd(const VarSlot& v, const dnn::TensorLayout& layout) const {
    const dnn::StorageId* storage = nullptr;
    switch (v.source) {
        case VarSlot::Source::Arena:
            if (const auto& blob = m_arena_blobs[v.index])
                storage = &blob->storage();
            break;
        case VarSlot::Source::Input:
            storage = &m_input_values[v.index].storage();
            break;
        case VarSlot::Source::Const:
            storage = &m_const_values[v.index].storage();
            break;
        case VarSlot::Source::Dynamic:
            storage = &m_dynamic_values[v.index].storage();
            break;
        case VarSlot::Source::Output:
            storage = &m_output_values[v.index].storage();
            break;
    }
    return {var_ptr(v), layout, storage};
}

void Executable::execute() {
    for (size_t i = 0; i < m_inputs.size(); ++i)
        NM_THROW_IF(!m_input_values[i].valid(), ParamError, "Executable: input '", m_inputs[i].name,
                    "' was never set");
    for (size_t slot : m_fresh_outputs) {
        const VarSlot& v = m_vars[slot];
        m_output_values[v.index] =
                DeviceTensor::empty(v.layout, v.layout.dtype, m_outputs[v.index].comp_node);
    }
    using Clock = std::chrono::steady_clock;
    // The first run creates the kernels' plans (oneDNN's JIT code): not what a step costs, so
    // it counts only as the last run.
    StepProfile* const last = m_profile.get();
    StepProfile* const profile = m_ran ? last : nullptr;
    const Clock::time_point run_start = last ? Clock::now() : Clock::time_point();
    auto timed = [&](size_t s, Clock::time_point start) {
        const Clock::time_point end = Clock::now();
        last->note_last(s, start, end);
        if (profile)
            profile->add_step(s, end - start);
    };
    for (size_t s = 0; s < m_steps.size(); ++s) {
        Step& step = m_steps[s];
        const Clock::time_point step_start = last ? Clock::now() : Clock::time_point();
        if (step.dynamic) {
            run_dynamic_step(step);
            if (last)
                timed(s, step_start);
            continue;
        }
        for (size_t i = 0; i < step.inputs.size(); ++i) {
            const VarSlot& v = m_vars[step.inputs[i]];
            step.in_nd[i] = var_nd(v, v.layout);
        }
        for (size_t i = 0; i < step.outputs.size(); ++i) {
            const VarSlot& v = m_vars[step.outputs[i]];
            step.out_nd[i] = var_nd(v, v.layout);
        }
        dnn::Workspace ws;
        if (step.workspace_size)
            ws = {m_arena_blobs[step.arena]->ptr() + step.workspace_offset, step.workspace_size};
        try {
            step.op().exec(step.comp_node, step.in_nd, step.out_nd, ws);
        } catch (const dnn::Error&) {
            rethrow_with_context(dnn::str_cat("Executable: ", step.op().to_string(), ": "));
        }
        // The arena's buffers are rewritten by every step and every run, at the same addresses:
        // a new version tells a kernel that a weight it cached from there is gone.
        for (size_t out : step.outputs)
            if (m_vars[out].source == VarSlot::Source::Arena && m_arena_blobs[m_vars[out].index])
                m_arena_blobs[m_vars[out].index]->note_write();
        if (last)
            timed(s, step_start);
    }
    for (const Arena& arena : m_arenas)
        arena.comp_node.sync();
    if (profile)
        profile->add_run(Clock::now() - run_start);
    for (DeviceTensor& t : m_dynamic_values)  // intermediates: freed, not kept to the next run
        t = DeviceTensor();
    // Outputs that are inputs or constants themselves, and repeated outputs, share values.
    for (size_t i = 0; i < m_outputs.size(); ++i) {
        const VarSlot& v = m_vars[m_output_var_slot[i]];
        if (v.source == VarSlot::Source::Input)
            m_output_values[i] = m_input_values[v.index];
        else if (v.source == VarSlot::Source::Const)
            m_output_values[i] = m_const_values[v.index];
        else if (v.index != i)
            m_output_values[i] = m_output_values[v.index];
    }
    m_ran = true;
}

void Executable::enable_profile() {
    if (!m_profile)
        m_profile = std::make_unique<StepProfile>(m_steps.size());
}

std::vector<Executable::StepTime> Executable::last_run_profile() const {
    std::vector<StepTime> steps;
    if (!m_profile)
        return steps;
    const auto& last = m_profile->last_run();
    for (size_t s = 0; s < m_steps.size(); ++s)
        if (last[s].first >= 0)
            steps.push_back({m_steps[s].node, static_cast<double>(last[s].first) * 1e-9,
                             static_cast<double>(last[s].second) * 1e-9});
    return steps;
}

const DeviceTensor& Executable::output(size_t index) const {
    NM_THROW_IF(index >= m_outputs.size(), ParamError, "Executable: output ", index,
                " out of range; there are ", m_outputs.size());
    NM_THROW_IF(!m_ran, ParamError, "Executable: output ", index, " before the first execute()");
    return m_output_values[index];
}

size_t Executable::planned_peak_bytes() const {
    size_t total = 0;
    for (const Arena& a : m_arenas)
        total += a.plan.arena_bytes;
    return total;
}

size_t Executable::live_peak_bytes() const {
    size_t total = 0;
    for (const Arena& a : m_arenas)
        total += a.plan.live_peak_bytes;
    return total;
}

size_t Executable::unplanned_total_bytes() const {
    size_t total = 0;
    for (const Arena& a : m_arenas)
        total += a.plan.total_bytes;
    return total;
}

std::string Executable::dump() const {
    return m_graph->dump(m_output_vars);
}

const OpDef& Executable::Step::op() const {
    return reseeded ? *reseeded : node->op();
}

std::vector<std::pair<size_t, uint64_t>> Executable::seeded_steps() const {
    std::vector<std::pair<size_t, uint64_t>> out;
    for (size_t i = 0; i < m_steps.size(); ++i)
        if (auto seed = m_steps[i].op().seed())
            out.emplace_back(i, *seed);
    return out;
}

void Executable::set_seed(size_t step, uint64_t seed) {
    NM_THROW_IF(step >= m_steps.size(), ParamError, "Executable::set_seed: step ", step,
                " out of range; there are ", m_steps.size());
    Step& s = m_steps[step];
    NM_THROW_IF(!s.op().seed(), ParamError, "Executable::set_seed: ", s.op().to_string(),
                " has no seed param");
    if (!s.reseeded)
        s.reseeded = s.node->op().clone();
    s.reseeded->set_param_field("seed", ParamValue(seed));
}

}  // namespace neomeg::graph
