// NEOMEG_EAGER_PROFILE=1: eager mode times every kernel-library call (its workspace and outputs
// allocated, the kernel run) after the first of each (op, input layouts), which plans the kernel,
// and prints to stderr at exit, per kind of op (the op's name; an Elemwise's mode too), the total
// time, the calls, and the sum over calls of their (op, layouts)'s fastest call: the steadier
// figure on a shared machine. It is the eager side of NEOMEG_GRAPH_PROFILE
// (graph/step_profile.h), so that one model's eager and traced steps compare op by op.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "neomeg/dnn/tensor.h"
#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

// The table's sums: per call site (an op with its params and input layouts) the time and the
// fastest call, per kind of op their totals. Thread-safe (eager ops may run on several threads).
class EagerProfile {
public:
    // One call at `site` of an op of kind `kind`; a site's first call is not counted.
    void add(std::string kind, std::string site, std::chrono::nanoseconds t);
    // The table, in milliseconds, slowest kind first.
    std::string summary() const;
    bool empty() const;

private:
    struct Site {
        int64_t ns = 0, min_ns = 0;
        size_t calls = 0;  // timed calls
    };
    mutable std::mutex m_mutex;
    std::map<std::pair<std::string, std::string>, Site> m_sites;
};

// Whether NEOMEG_EAGER_PROFILE is set to something other than "0" (read once per process).
bool eager_profile_enabled();

// Adds one call of `def` on inputs of `layouts` that took `t` to the process's profile, which
// prints its summary at exit.
void eager_profile_add(const OpDef& def, std::span<const dnn::TensorLayout> layouts,
                       std::chrono::nanoseconds t);

}  // namespace neomeg::imperative
