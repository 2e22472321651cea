// Dynamic tensor rematerialisation (DTR, MegEngine's `megengine.dtr`): while enabled, large
// outputs of ops recorded for autograd remember how they were computed (the op, its inputs and
// preset shapes), so that when the comp node's allocated memory passes the eviction threshold the
// runtime frees the ones that are cheapest to recompute per byte and least recently used, and
// recomputes them when they are read again (usually by the backward pass). The training step's
// results are the same bits: the same kernels run on the same inputs.
//
// Scope, and why:
//  - Only outputs made while a GradManager records are candidates: those are what a training
//    step keeps for backward. Outside recording (an optimizer step, inference) no history is kept,
//    so chains of updates (a parameter from the previous one) never build up.
//  - An output below `evictee_minimum_size`, a view of an input, a custom (Python) op's output,
//    anything made while jit.trace records, or on a thread other than the one that enabled DTR is
//    left alone. Its handle stays an ordinary tensor and stops any recomputation chain.
//  - Eviction runs after an op returns to the outermost apply(): no kernel then holds a raw
//    pointer into a candidate. A value someone else shares (a view, numpy's zero-copy array) is
//    never evicted.
//  - When the last user handle of a candidate dies but other candidates still need it for their
//    recomputation, its memory is freed at once (it is recomputed only if they are).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative::dtr {

// What eviction counts as the cost of recomputing a value (the numerator of its score).
enum class Cost {
    // Bytes its op read and wrote, MegEngine 1.13's estimate: a function of the program alone, so
    // a run evicts the same values, and peaks at the same memory, on any machine under any load.
    Estimate,
    // Its op's wall-clock time, the DTR paper's: tells a convolution from an elementwise op of the
    // same size, but what is evicted (and the peak) then changes with the machine's load.
    Measured,
};

struct Config {
    bool enabled = false;
    size_t eviction_threshold = 0;                  // bytes allocated on the node; 0: never evict
    size_t evictee_minimum_size = size_t{1} << 20;  // smaller outputs are never candidates
    bool sqrt_sampling = false;                     // scan sqrt(N) random candidates, not all N
    Cost cost = Cost::Estimate;
};

Config config();
void set_config(const Config& c);  // enabling binds DTR to the calling thread
// Forgets every candidate (MegEngine's clear_candidates): nothing made so far is evicted again.
// Values already evicted still recompute when read.
void clear_candidates();

struct Stats {
    size_t evictions = 0;       // values freed by the threshold policy
    size_t released = 0;        // values freed because only recomputation could still need them
    size_t recomputations = 0;  // ops re-run to bring a value back
    size_t candidates = 0;      // values alive and eligible for eviction (counted on request)
};
Stats stats();
void reset_stats();

// apply() while DTR is on: runs the op as apply() does (timing it if the cost is measured),
// turns eligible outputs into recomputable handles before autograd saves them, then enforces the
// threshold. `shapes` are apply()'s preset output shapes (empty if none).
std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const dnn::TensorShape> shapes);
// Whether DTR is on for the calling thread: one thread-local load on apply()'s hot path.
extern thread_local bool t_enabled;
inline bool active() {
    return t_enabled;
}

}  // namespace neomeg::imperative::dtr
