// NEOMEG_GRAPH_PROFILE=1: an executable times each of its steps in every run after the first (which
// creates the kernels' plans) and, when it is destroyed, prints to stderr the time per run of each
// kind of step (the op's name; an Elemwise's mode too), the
// layout conversions among them, and the executor's own time between steps; beside each, the sum
// of its steps' fastest runs, which on a shared machine (where other processes preempt a step now
// and then) is the steadier figure. The CPU queues run synchronously, so a step's wall time is its
// kernel's; a GPU step's is only its launch.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace neomeg::graph {

class OperatorNode;

class StepProfile {
public:
    // Whether NEOMEG_GRAPH_PROFILE is set to something other than "0" (read once per process).
    static bool enabled();

    explicit StepProfile(size_t num_steps)
        : m_step_ns(num_steps, 0), m_min_ns(num_steps, std::numeric_limits<int64_t>::max()) {}
    void add_step(size_t step, std::chrono::nanoseconds t) {
        m_step_ns[step] += t.count();
        m_min_ns[step] = std::min(m_min_ns[step], static_cast<int64_t>(t.count()));
    }
    void add_run(std::chrono::nanoseconds t) {
        m_run_ns += t.count();
        ++m_runs;
    }
    // The table, in milliseconds per run, slowest kind first; `nodes[i]` ran step i.
    std::string summary(const std::vector<const OperatorNode*>& nodes) const;

private:
    std::vector<int64_t> m_step_ns;
    std::vector<int64_t> m_min_ns;  // each step's fastest run
    int64_t m_run_ns = 0;
    size_t m_runs = 0;
};

}  // namespace neomeg::graph
