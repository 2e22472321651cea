// DTR's policy (dtr.h): which outputs become recomputable, which value to evict, how to bring one
// back. The eviction score is the DTR paper's h = cost / (bytes * staleness), with the cost of a
// value's already-evicted inputs added (they must be recomputed with it); a value no user holds
// any more goes first. Cost is Config::cost's (bytes moved by default), staleness counts accesses
// and new values, not time: by default no decision depends on the clock.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <unordered_set>

#include "dtr_value.h"
#include "exec.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/trace.h"

namespace neomeg::imperative {

namespace dtr {
thread_local bool t_enabled = false;
}

namespace {

struct State {
    std::mutex mutex;  // a handle may die on another thread; everything else runs on DTR's own
    dtr::Config config;
    dtr::Stats stats;
    std::vector<std::weak_ptr<DtrValue>> candidates;
    size_t live_after_prune = 0;
    uint64_t tick = 0;
};

State& state() {
    static State s;
    return s;
}

int t_apply_depth = 0;  // apply()s in progress on the DTR thread (a custom op's inner ones)

}  // namespace

std::shared_ptr<DtrValue> DtrValue::shared_of(const Tensor& t) {
    return t.m_dtr ? t.m_dtr->value : nullptr;
}

Tensor DtrValue::make_tensor(const Tensor& value, std::shared_ptr<DtrValue> v) {
    Tensor t;
    t.m_layout = value.m_layout;
    t.m_offset = value.m_offset;
    t.m_auto_layout = value.m_auto_layout;
    t.m_dtr = std::make_shared<DtrHandle>();
    t.m_dtr->value = std::move(v);
    return t;
}

const Tensor& DtrValue::materialize() {
    auto& s = state();
    last_access = ++s.tick;
    if (value.valid())
        return value;
    std::vector<Tensor> ins;
    ins.reserve(inputs.size());
    for (auto& in : inputs)
        ins.push_back(in.dtr ? in.dtr->materialize() : in.plain);
    auto outs = shapes.empty() ? run_op(*op, ins) : run_op_with_shapes(*op, ins, shapes);
    NM_THROW_IF(output_index >= outs.size() || !outs[output_index].layout().eq_layout(layout),
                Error, "DTR: recomputing ", op->to_string(), " gave ",
                output_index < outs.size() ? outs[output_index].layout().to_string() : "nothing",
                " for output ", output_index, ", not ", layout.to_string());
    value = outs[output_index];
    std::lock_guard lock(s.mutex);
    ++s.stats.recomputations;
    return value;
}

DtrHandle::~DtrHandle() {
    // Nothing but other values' recomputation can need it now: free it, unless it is shared.
    value->has_users = false;
    if (value.use_count() > 1 && value->evictable_bytes()) {
        value->value = {};
        std::lock_guard lock(state().mutex);
        ++state().stats.released;
    }
}

DtrValue* DtrValue::of(const Tensor& t) {
    return t.m_dtr ? t.m_dtr->value.get() : nullptr;
}

CompNode resident_comp_node(const DtrHandle& h) {
    return h.value->cn;
}

namespace dtr {
namespace {

bool eligible(const OpDef& op, const Tensor& out, size_t minimum) {
    size_t bytes = out.valid() ? DtrValue::owned_bytes(out) : 0;
    return op.kind() != OpKind::Custom && bytes > 0 && bytes >= minimum;
}

void wrap_outputs(const OpDef& op, std::span<const Tensor> inputs,
                  std::span<const dnn::TensorShape> shapes, std::vector<Tensor>& outputs,
                  double cost) {
    auto& s = state();
    std::shared_ptr<OpDef> op_copy;
    std::vector<DtrValue::Input> ins;
    for (auto& out : outputs) {
        if (!eligible(op, out, s.config.evictee_minimum_size))
            continue;
        if (!op_copy) {
            op_copy = op.clone();
            for (const Tensor& in : inputs)
                if (auto d = DtrValue::shared_of(in))
                    ins.push_back({{}, std::move(d)});
                else
                    ins.push_back({in, nullptr});
        }
        auto v = std::make_shared<DtrValue>();
        v->bytes = DtrValue::owned_bytes(out);
        v->value = out;
        v->op = op_copy;
        v->inputs = ins;
        v->shapes.assign(shapes.begin(), shapes.end());
        v->output_index = static_cast<size_t>(&out - outputs.data());
        v->layout = out.layout();
        v->cn = out.comp_node();
        v->cost = cost;
        v->last_access = ++s.tick;
        {
            std::lock_guard lock(s.mutex);
            // Dead entries go when the list has doubled, not only when evicting: a threshold
            // that is never reached must not let them pile up step after step.
            if (s.candidates.size() >= 2 * s.live_after_prune + 64) {
                std::erase_if(s.candidates, [](const auto& w) { return w.expired(); });
                s.live_after_prune = s.candidates.size();
            }
            s.candidates.push_back(v);
        }
        out = DtrValue::make_tensor(out, std::move(v));
    }
}

// The recomputation cost of `v` if evicted now: its own op plus its evicted inputs'.
double recompute_cost(const DtrValue& v) {
    double c = v.cost + 1.0;
    for (auto& in : v.inputs)
        if (in.dtr && !in.dtr->value.valid())
            c += in.dtr->cost;
    return c;
}

// Config::Cost::Estimate's cost: the bytes the op read and wrote (layouts only: an evicted input
// is not brought back to be counted).
double estimated_cost(std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
    size_t bytes = 0;
    for (const Tensor& t : inputs)
        bytes += t.valid() ? t.layout().span_bytes() : 0;
    for (const Tensor& t : outputs)
        bytes += t.valid() ? t.layout().span_bytes() : 0;
    return static_cast<double>(bytes);
}

void enforce(CompNode cn, const std::unordered_set<const DtrValue*>& keep) {
    auto& s = state();
    if (!s.config.eviction_threshold)
        return;
    std::mt19937_64 rng(s.tick);
    while (cn.memory_stats().allocated > s.config.eviction_threshold) {
        std::shared_ptr<DtrValue> best;
        double best_score = 0;
        {
            std::lock_guard lock(s.mutex);
            std::erase_if(s.candidates, [](const auto& w) { return w.expired(); });
            size_t n = s.candidates.size(), scan = n;
            if (s.config.sqrt_sampling && n > 4)
                scan = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
            for (size_t k = 0; k < scan; ++k) {
                size_t i = scan == n ? k : static_cast<size_t>(rng() % n);
                auto v = s.candidates[i].lock();
                if (!v || v->cn != cn || keep.count(v.get()))
                    continue;
                size_t bytes = v->evictable_bytes();
                if (!bytes)
                    continue;
                double staleness = static_cast<double>(s.tick - v->last_access) + 1.0;
                double score =
                        v->has_users ? recompute_cost(*v) / (static_cast<double>(bytes) * staleness)
                                     : -1.0;
                if (!best || score < best_score) {
                    best = v;
                    best_score = score;
                }
            }
        }
        if (!best)
            return;  // nothing left to evict: the threshold is below what must stay
        best->value = {};
        std::lock_guard lock(s.mutex);
        ++s.stats.evictions;
    }
}

}  // namespace

Config config() {
    std::lock_guard lock(state().mutex);
    return state().config;
}

void set_config(const Config& c) {
    {
        std::lock_guard lock(state().mutex);
        state().config = c;
    }
    t_enabled = c.enabled;
}

void clear_candidates() {
    std::lock_guard lock(state().mutex);
    state().candidates.clear();
}

Stats stats() {
    std::lock_guard lock(state().mutex);
    Stats st = state().stats;
    st.candidates =
            static_cast<size_t>(std::count_if(state().candidates.begin(), state().candidates.end(),
                                              [](const auto& w) { return !w.expired(); }));
    return st;
}

void reset_stats() {
    std::lock_guard lock(state().mutex);
    state().stats = {};
}

std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const dnn::TensorShape> shapes) {
    // The clock is read only for the measured cost; the estimate needs layouts alone.
    const bool measured = state().config.cost == Cost::Measured;
    std::chrono::steady_clock::time_point start;
    if (measured)
        start = std::chrono::steady_clock::now();
    ++t_apply_depth;
    std::vector<Tensor> outputs;
    try {
        outputs = shapes.empty() ? run_op(op, inputs) : run_op_with_shapes(op, inputs, shapes);
    } catch (...) {
        --t_apply_depth;
        throw;
    }
    --t_apply_depth;
    // Only what a GradManager records is kept for backward, so only that is worth a history.
    if (GradKey::any_active() && !TraceRecorder::any_active()) {
        double cost = measured ? std::chrono::duration<double, std::nano>(
                                         std::chrono::steady_clock::now() - start)
                                         .count()
                               : estimated_cost(inputs, outputs);
        wrap_outputs(op, inputs, shapes, outputs, cost);
    }
    if (GradKey::any_active())
        GradKey::record(op, inputs, outputs);
    if (TraceRecorder::any_active()) [[unlikely]]
        TraceRecorder::current()->on_apply(op, inputs, outputs, shapes);
    if (t_apply_depth == 0 && !outputs.empty() && outputs[0].valid()) {
        // The op's own inputs and outputs are the likeliest to be read next.
        std::unordered_set<const DtrValue*> keep;
        for (const Tensor& t : inputs)
            keep.insert(DtrValue::of(t));
        for (const Tensor& t : outputs)
            keep.insert(DtrValue::of(t));
        enforce(outputs[0].comp_node(), keep);
    }
    return outputs;
}

}  // namespace dtr
}  // namespace neomeg::imperative
