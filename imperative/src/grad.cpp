#include "neomeg/imperative/grad.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "grad_rules/ops_util.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/trace.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/grad_decl.h"
#include "neomeg/op/op_ids.h"
#include "neomeg/op/view_params.h"
#include "shared_op.h"

namespace neomeg::imperative {

namespace {

// A row-major tensor's gradient is row-major, as PyTorch keeps a parameter's gradient in the
// parameter's layout: a filter gradient follows its channels-last src (autocast's or the
// program's), and an optimizer would otherwise turn the parameter channels-last. The same holds
// inside the graph: the gradient of a row-major activation that the runtime made channels-last
// for the next op (an automatic layout) goes back row-major, so the ops before it see one layout
// (oneDNN runs only its reference kernels on mixed ones).
Tensor in_layout(const Tensor& grad, bool wrt_channels_last) {
    if (!dnn::is_channels_last(grad.layout()) || wrt_channels_last)
        return grad;
    // Channels-last strides over row-major memory (an (N, C, 1, 1) gradient): a view suffices.
    Tensor out = grad.layout().is_contiguous()
                         ? grad.view(dnn::TensorLayout(grad.shape(), grad.dtype()))
                         : grad.contiguous();
    TraceRecorder::note_same_value_if_recording(grad, out);
    return out;
}

Tensor in_layout_of(const Tensor& grad, const Tensor& wrt) {
    return in_layout(grad, dnn::is_channels_last(wrt.layout()));
}

}  // namespace

struct GradNode {
    std::shared_ptr<OpDef> op;
    const GradRule* rule;
    uint64_t seq;
    std::vector<Tensor> saved_inputs, saved_outputs;     // invalid where the rule needs none
    std::vector<std::shared_ptr<GradSlot>> input_slots;  // null: that input needs no gradient
    std::vector<char> input_channels_last;  // per input that needs a gradient: its forward layout's
    std::vector<std::shared_ptr<GradSlot>> output_slots;
    std::vector<dnn::TensorLayout> output_layouts;  // for zero gradients of unused outputs
    CompNode comp_node;
    // Set once a backward has run the node and dropped what it saved (see GradKey::backward).
    bool consumed = false;
};

namespace {

std::array<GradRule, kOpIdLimit>& rule_table() {
    static std::array<GradRule, kOpIdLimit> table{};
    return table;
}

// Keys recording on this thread. A plain vector: usually empty or one key.
thread_local std::vector<GradKey*> t_active_keys;

Tensor ones_like(const Tensor& t) {
    dnn::param::Fill p;
    p.value = 1;
    p.dtype = t.dtype().enumv();
    dnn::TensorShape shape = t.shape();
    return run_generator(*shared_op<ops::Fill>(p), {&shape, 1}, t.comp_node())[0];
}

// A given output gradient of y's shape. MegEngine 1.13 also takes one of y's elements laid out
// otherwise ((1, n) for (n,), (1,) for a scalar) or one that broadcasts to y (a scalar or (1,)
// for a whole batch of losses): some of its backward rules broadcast dy themselves.
Tensor dy_for(const Tensor& dy, const dnn::TensorShape& y) {
    const dnn::TensorShape& s = dy.shape();
    if (s.eq_shape(y))
        return dy;
    if (s.total_nr_elems() == y.total_nr_elems())
        return grad_util::reshape(dy, y);
    bool broadcasts = s.ndim <= y.ndim;
    for (size_t k = 1; broadcasts && k <= s.ndim; ++k)
        broadcasts = s[s.ndim - k] == 1 || s[s.ndim - k] == y[y.ndim - k];
    NM_THROW_IF(!broadcasts, ShapeError, "backward: gradient of shape ", s.to_string(),
                " given for an output of shape ", y.to_string());
    return grad_util::broadcast_to(dy, y);
}

Tensor zeros(const dnn::TensorLayout& layout, CompNode cn) {
    dnn::param::Fill p;
    p.dtype = layout.dtype.enumv();
    dnn::TensorShape shape = layout;
    return run_generator(*shared_op<ops::Fill>(p), {&shape, 1}, cn)[0];
}

Tensor add(const Tensor& a, const Tensor& b) {
    dnn::param::Elemwise p;
    p.mode = dnn::param::Elemwise::Mode::ADD;
    std::array<Tensor, 2> in{a, b};
    return imperative::apply(*shared_op<ops::Elemwise>(p), in)[0];
}

}  // namespace

std::shared_ptr<GradSlot> AutogradMeta::slot_of(const GradKey* key) const {
    for (auto& [k, slot] : slots)
        if (k.lock().get() == key)
            return slot;
    return nullptr;
}

bool register_grad_rule(OpId id, GradRule::Fn fn) {
    GradDecl decl = grad_decl(id);
    NM_THROW_IF(!decl.differentiable, Error, "register_grad_rule: the definition of ",
                op_id_name(id), " declares no gradient; add grad=Grad(...) to its op(...)");
    rule_table()[static_cast<size_t>(id)] =
            GradRule{fn, decl.save_inputs, decl.save_outputs, decl.takes_absent_grads};
    return true;
}

const GradRule* grad_rule_of(const OpDef& op) {
    if (op.kind() == OpKind::Custom) {
        const auto* custom = dynamic_cast<const CustomOpDef*>(&op);
        return custom ? custom->grad_rule() : nullptr;
    }
    return find_grad_rule(op.id());
}

const GradRule* find_grad_rule(OpId id) {
    if (static_cast<size_t>(id) >= kOpIdLimit)
        return nullptr;
    const GradRule& r = rule_table()[static_cast<size_t>(id)];
    return r.fn ? &r : nullptr;
}

std::shared_ptr<GradKey> GradKey::make() {
    return std::shared_ptr<GradKey>(new GradKey());
}

GradKey::~GradKey() {
    deactivate();
}

void GradKey::attach(Tensor& t) {
    NM_THROW_IF(!t.dtype().is_float(), DTypeError, "GradManager.attach: a tensor of dtype ",
                t.dtype().name(), " cannot have a gradient (float dtypes only)");
    auto meta = t.grad_meta();
    if (!meta) {
        meta = std::make_shared<AutogradMeta>();
        t.set_grad_meta(meta);
    }
    // A parameter is attached to a new key every training step: drop the slots of keys that
    // are gone, or the list (and every slot_of scan over it) grows by one per step.
    std::erase_if(meta->slots, [](const auto& entry) { return entry.first.expired(); });
    if (meta->slot_of(this))
        return;
    meta->slots.emplace_back(weak_from_this(), std::make_shared<GradSlot>());
}

bool GradKey::is_attached(const Tensor& t) const {
    return t.grad_meta() && t.grad_meta()->slot_of(this);
}

void GradKey::activate() {
    if (!m_active) {
        t_active_keys.push_back(this);
        m_active = true;
    }
}

void GradKey::deactivate() {
    if (m_active) {
        std::erase(t_active_keys, this);
        m_active = false;
    }
}

bool GradKey::any_active() {
    return !t_active_keys.empty();
}

Tensor new_identity(const Tensor& t) {
    std::vector<Tensor> out{t.detach()};
    if (t.grad_meta() && GradKey::any_active()) {
        // A reshape to its own shape: a view, whose backward rule hands dy through.
        param::Reshape p;
        for (size_t i = 0; i < t.shape().ndim; ++i)
            p.shape.push_back(static_cast<int32_t>(t.shape()[i]));
        GradKey::record(ops::Reshape(p), {&t, 1}, out);
    }
    return out[0];
}

void GradKey::release() {
    m_tape.clear();
}

void GradKey::record(const OpDef& op, std::span<const Tensor> inputs,
                     std::vector<Tensor>& outputs) {
    // Only float tensors carry gradients (attach refuses others), and complex ones on their way
    // back to float ones (PyTorch's convention, grad_rules/elemwise_complex.cpp): an op none of
    // whose outputs is float or complex (a comparison, argmax, a cast to an integer dtype) ends
    // every path through it, as in MegEngine, where a parameter reached only that way keeps grad
    // None.
    if (std::none_of(outputs.begin(), outputs.end(), [](const Tensor& t) {
            return t.dtype().is_float() || t.dtype().is_complex();
        }))
        return;
    const GradRule* rule = nullptr;
    bool looked_up = false;
    std::shared_ptr<OpDef> op_copy;
    for (GradKey* key : t_active_keys) {
        std::vector<std::shared_ptr<GradSlot>> in_slots(inputs.size());
        bool any = false;
        for (size_t i = 0; i < inputs.size(); ++i)
            if (auto& meta = inputs[i].grad_meta())
                any |= static_cast<bool>(in_slots[i] = meta->slot_of(key));
        if (!any)
            continue;
        if (!looked_up) {
            rule = grad_rule_of(op);
            looked_up = true;
        }
        if (!rule)
            return;  // not differentiable: outputs carry no gradient for any key
        if (!op_copy)
            op_copy = op.clone();
        auto node = std::make_shared<GradNode>();
        node->op = op_copy;
        node->rule = rule;
        node->seq = key->m_next_seq++;
        node->input_slots = std::move(in_slots);
        node->input_channels_last.resize(inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i)
            node->input_channels_last[i] =
                    node->input_slots[i] && dnn::is_channels_last(inputs[i].layout());
        if (rule->save_inputs)
            node->saved_inputs.assign(inputs.begin(), inputs.end());
        node->comp_node = outputs.empty() ? CompNode() : outputs[0].comp_node();
        for (size_t i = 0; i < outputs.size(); ++i) {
            auto slot = std::make_shared<GradSlot>();
            slot->producer = node;
            slot->output_index = i;
            node->output_slots.push_back(slot);
            node->output_layouts.push_back(outputs[i].layout());
            auto& meta = outputs[i].grad_meta();
            if (!meta)
                outputs[i].set_grad_meta(std::make_shared<AutogradMeta>());
            outputs[i].grad_meta()->slots.emplace_back(key->weak_from_this(), slot);
        }
        // Saved after the slots exist, so that saved outputs carry them (higher order).
        if (rule->save_outputs)
            node->saved_outputs = outputs;
        key->m_tape.push_back(std::move(node));
    }
}

std::vector<Tensor> GradKey::backward(std::span<const Tensor> ys, std::span<const Tensor> dys,
                                      std::span<const Tensor> wrt, const ReadyFn& on_ready) {
    NM_THROW_IF(!dys.empty() && dys.size() != ys.size(), ParamError, "backward: ", ys.size(),
                " outputs but ", dys.size(), " output gradients");
    // Reactivated however backward ends (a backward rule or on_ready may throw).
    struct Reactivate {
        GradKey* key;
        bool was_active;
        ~Reactivate() {
            if (was_active)
                key->activate();
        }
    } reactivate{this, m_active};
    deactivate();
    std::unordered_map<const GradSlot*, Tensor> grads;
    auto accumulate = [&](const GradSlot* slot, const Tensor& g) {
        auto [it, fresh] = grads.emplace(slot, g);
        if (!fresh)
            it->second = add(it->second, g);
    };
    std::vector<GradNode*> stack;
    for (size_t i = 0; i < ys.size(); ++i) {
        auto slot = ys[i].grad_meta() ? ys[i].grad_meta()->slot_of(this) : nullptr;
        if (!slot)
            continue;
        Tensor dy = dys.empty() ? ones_like(ys[i]) : dy_for(dys[i], ys[i].shape());
        accumulate(slot.get(), dy);
        // Once per node, even when several of ys are outputs of one node (Split, TopK).
        if (auto node = slot->producer.lock();
            node && std::find(stack.begin(), stack.end(), node.get()) == stack.end())
            stack.push_back(node.get());
    }
    // Nodes reachable from ys, then run in reverse recording order: a node runs after every
    // node that consumed its outputs.
    std::unordered_set<GradNode*> seen(stack.begin(), stack.end());
    std::vector<GradNode*> order;
    while (!stack.empty()) {
        GradNode* n = stack.back();
        stack.pop_back();
        order.push_back(n);
        for (auto& s : n->input_slots)
            if (s)
                if (auto p = s->producer.lock(); p && seen.insert(p.get()).second)
                    stack.push_back(p.get());
    }
    std::sort(order.begin(), order.end(), [](GradNode* a, GradNode* b) { return a->seq > b->seq; });
    std::vector<std::shared_ptr<GradSlot>> wrt_slots(wrt.size());
    std::unordered_set<const GradSlot*> wrt_slot_set;
    for (size_t i = 0; i < wrt.size(); ++i)
        if (wrt[i].grad_meta())
            if ((wrt_slots[i] = wrt[i].grad_meta()->slot_of(this)))
                wrt_slot_set.insert(wrt_slots[i].get());
    // ready_after[k]: the wrt indices whose gradient is final once order[k] has run, the last
    // reader of their slot; those no node reads (a y itself) are final at once.
    std::vector<std::vector<size_t>> ready_after(order.size());
    if (on_ready) {
        std::unordered_map<const GradSlot*, size_t> last_reader;
        for (size_t k = 0; k < order.size(); ++k)
            for (auto& s : order[k]->input_slots)
                if (s)
                    last_reader[s.get()] = k;
        for (size_t i = 0; i < wrt.size(); ++i) {
            if (!wrt_slots[i])
                continue;
            auto it = last_reader.find(wrt_slots[i].get());
            if (it != last_reader.end()) {
                ready_after[it->second].push_back(i);
            } else if (auto g = grads.find(wrt_slots[i].get()); g != grads.end()) {
                g->second = in_layout_of(g->second, wrt[i]);  // final: the result reuses it
                on_ready(i, g->second);
            }
        }
    }
    auto report = [&](size_t k) {
        for (size_t i : ready_after[k])
            if (auto g = grads.find(wrt_slots[i].get()); g != grads.end()) {
                g->second = in_layout_of(g->second, wrt[i]);
                on_ready(i, g->second);
            }
    };
    for (size_t k = 0; k < order.size(); ++k) {
        GradNode* n = order[k];
        std::vector<Tensor> out_grads(n->output_slots.size());
        bool any = false;
        for (size_t i = 0; i < out_grads.size(); ++i) {
            auto it = grads.find(n->output_slots[i].get());
            if (it != grads.end()) {
                out_grads[i] = it->second;
                any = true;
            }
        }
        if (!any) {
            report(k);
            continue;
        }
        for (size_t i = 0; i < out_grads.size(); ++i)
            if (!out_grads[i].valid() && !n->rule->takes_absent_grads)
                out_grads[i] = zeros(n->output_layouts[i], n->comp_node);
        NM_THROW_IF(n->consumed, Error, "backward: the recording of ", n->op->name(),
                    " was already differentiated by an earlier backward, which released what it "
                    "saved; record the computation again for another backward");
        std::vector<Tensor> in(n->input_slots.size()), out(n->output_slots.size());
        if (n->rule->save_inputs)
            in = std::move(n->saved_inputs);
        if (n->rule->save_outputs)
            out = std::move(n->saved_outputs);
        n->consumed = true;
        std::vector<char> needs(n->input_slots.size());
        for (size_t i = 0; i < needs.size(); ++i)
            needs[i] = n->input_slots[i] != nullptr;
        std::span<const bool> needs_span(reinterpret_cast<const bool*>(needs.data()), needs.size());
        auto in_grads = n->rule->fn(*n->op, in, out, out_grads, needs_span);
        // What the node saved and the gradients of its outputs are dead now (nothing later in
        // `order` reads them): dropped here rather than with the tape, so that backward's peak
        // is about the forward's, not the forward's plus every intermediate gradient.
        in.clear();
        out.clear();
        out_grads.clear();
        for (auto& slot : n->output_slots)
            if (!wrt_slot_set.count(slot.get()))
                grads.erase(slot.get());
        for (size_t i = 0; i < in_grads.size() && i < n->input_slots.size(); ++i)
            if (n->input_slots[i] && in_grads[i].valid())
                accumulate(n->input_slots[i].get(),
                           in_layout(in_grads[i], n->input_channels_last[i] != 0));
        report(k);
    }
    std::vector<Tensor> result(wrt.size());
    for (size_t i = 0; i < wrt.size(); ++i) {
        if (!wrt_slots[i])
            continue;
        auto it = grads.find(wrt_slots[i].get());
        if (it != grads.end())
            result[i] = in_layout_of(it->second, wrt[i]);
    }
    return result;
}

}  // namespace neomeg::imperative
