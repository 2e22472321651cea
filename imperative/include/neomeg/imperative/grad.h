// Autograd: a tape per GradKey (one per GradManager recording session).
//
// While a key is active, apply() records every op whose inputs carry a slot of that key: the
// outputs get slots whose producer is a GradNode keeping the op, what its backward rule needs,
// and the inputs' slots. backward() walks the nodes reachable from y in reverse order and runs
// each op's backward rule, which is itself made of apply() calls: other keys that are active
// record the backward pass, which is how higher-order gradients work.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative {

class GradKey;
struct GradNode;

// A tensor's place in one key's graph; a slot without a (live) producer is a leaf.
struct GradSlot {
    std::weak_ptr<GradNode> producer;
    size_t output_index = 0;
};

struct AutogradMeta {
    // (key, slot) pairs; a tensor is rarely recorded by more than two keys.
    std::vector<std::pair<std::weak_ptr<GradKey>, std::shared_ptr<GradSlot>>> slots;
    std::shared_ptr<GradSlot> slot_of(const GradKey* key) const;
};

// Backward rule of one op: given the op, its inputs and outputs (those the rule saves; others
// are invalid tensors) and a gradient for every output (see takes_absent_grads), returns one
// gradient per input (an invalid Tensor where an input gets none or needs none). A registry op's
// flags come from its definition (GradDecl); a CustomOpDef sets its own.
struct GradRule {
    using Fn = std::vector<Tensor> (*)(const OpDef& op, std::span<const Tensor> inputs,
                                       std::span<const Tensor> outputs,
                                       std::span<const Tensor> output_grads,
                                       std::span<const bool> input_needs_grad);
    Fn fn = nullptr;
    bool save_inputs = true;
    bool save_outputs = false;
    // The rule takes an invalid Tensor as the gradient of an output no gradient reached, instead
    // of zeros: a rule that ignores some outputs' gradients (BatchNorm's statistics) spares the
    // tape a Fill per such output.
    bool takes_absent_grads = false;
};

// Rules live in imperative/src/grad_rules/<group>.cpp and register by op id (NM_REGISTER_GRAD);
// an op without a rule is not differentiable and its outputs carry no gradient (MegEngine's
// behaviour). Registers `fn` as the rule of the registry op `id` with the flags its definition
// declares (grad_decl(id)); an op whose definition declares no gradient takes no rule (Error).
bool register_grad_rule(OpId id, GradRule::Fn fn);
const GradRule* find_grad_rule(OpId id);
// The rule of `op`: a CustomOpDef's own, else the one registered for its id.
const GradRule* grad_rule_of(const OpDef& op);

class GradKey : public std::enable_shared_from_this<GradKey> {
public:
    static std::shared_ptr<GradKey> make();
    ~GradKey();

    // Gives `t` a leaf slot of this key (shared by every copy of t, also the Python object's).
    void attach(Tensor& t);
    bool is_attached(const Tensor& t) const;

    // Starts/stops recording on this thread.
    void activate();
    void deactivate();
    bool active() const { return m_active; }

    // Called with (i, gradient of wrt[i]) as soon as that gradient is final (every node that
    // reads wrt[i] has run), while the rest of backward still runs: megengine.distributed
    // starts a gradient bucket's all-reduce there, overlapping communication with backward.
    using ReadyFn = std::function<void(size_t, const Tensor&)>;

    // Gradients of sum(ys[i] * dys[i]) with respect to each of `wrt` (an invalid Tensor where no
    // path leads). dys default to ones. The key is inactive while it runs, so its own backward
    // is not recorded into itself; other active keys record it. `on_ready`, when given, gets
    // each valid gradient once, in the order they become final.
    std::vector<Tensor> backward(std::span<const Tensor> ys, std::span<const Tensor> dys,
                                 std::span<const Tensor> wrt, const ReadyFn& on_ready = {});
    // Drops the recorded graph.
    void release();

    // Called by apply(): records op on every active key whose slots the inputs carry.
    static void record(const OpDef& op, std::span<const Tensor> inputs,
                       std::vector<Tensor>& outputs);
    static bool any_active();

private:
    GradKey() = default;
    std::vector<std::shared_ptr<GradNode>> m_tape;
    uint64_t m_next_seq = 0;
    bool m_active = false;
};

// `t`'s value as a new tensor, as MegEngine's Tensor(t) makes one: the keys recording `t` record
// an identity op from it, so gradients reach `t` through the new tensor, which still has an
// autograd identity of its own (attaching it does not attach `t`); with no key recording `t`,
// the new tensor has none (a later recording does not connect it to `t`).
Tensor new_identity(const Tensor& t);

}  // namespace neomeg::imperative
