// NEOMEG_GRAPH_PROFILE=1: an executable times each of its steps in every run after the first (which
// creates the kernels' plans) and, when it is destroyed, prints to stderr the time per run of each
// kind of step (the op's name; an Elemwise's mode too), the
// layout conversions among them, and the executor's own time between steps; beside each, the sum
// of its steps' fastest runs, which on a shared machine (where other processes preempt a step now
// and then) is the steadier figure. The CPU queues run synchronously, so a step's wall time is its
// kernel's; a GPU step's is only its launch. It also keeps the last run's start and end of each
// step, the first run included (jit.trace(profiling=True)'s get_profile reads them through
// Executable::last_run_profile).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace neomeg::graph {

class OperatorNode;

class StepProfile {
public:
    // Whether NEOMEG_GRAPH_PROFILE is set to something other than "0" (read once per process).
    static bool enabled();

    explicit StepProfile(size_t num_steps)
        : m_step_ns(num_steps, 0),
          m_min_ns(num_steps, std::numeric_limits<int64_t>::max()),
          m_last(num_steps, {-1, -1}),
          m_origin(std::chrono::steady_clock::now()) {}
    void add_step(size_t step, std::chrono::nanoseconds t) {
        m_step_ns[step] += t.count();
        m_min_ns[step] = std::min(m_min_ns[step], static_cast<int64_t>(t.count()));
    }
    void add_run(std::chrono::nanoseconds t) {
        m_run_ns += t.count();
        ++m_runs;
    }
    // The last run's step `step`: when it started and ended.
    void note_last(size_t step, std::chrono::steady_clock::time_point start,
                   std::chrono::steady_clock::time_point end) {
        m_last[step] = {(start - m_origin).count(), (end - m_origin).count()};
    }
    // Per step, the last run's start and end in nanoseconds since the profile was made; -1 for a
    // step that has not run.
    const std::vector<std::pair<int64_t, int64_t>>& last_run() const { return m_last; }
    // The table, in milliseconds per run, slowest kind first; `nodes[i]` ran step i.
    std::string summary(const std::vector<const OperatorNode*>& nodes) const;

private:
    std::vector<int64_t> m_step_ns;
    std::vector<int64_t> m_min_ns;  // each step's fastest run
    std::vector<std::pair<int64_t, int64_t>> m_last;
    std::chrono::steady_clock::time_point m_origin;
    int64_t m_run_ns = 0;
    size_t m_runs = 0;
};

}  // namespace neomeg::graph
