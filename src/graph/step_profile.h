// NEOMEG_GRAPH_PROFILE=1: an executable times each of its steps in every run after the first (which
// creates the kernels' plans) and, when it is destroyed, prints to stderr the time per run of each
// kind of step (the op's name; an Elemwise's mode too), the
// layout conversions among them, and the executor's own time between steps. The CPU queues run
// synchronously, so a step's wall time is its kernel's; a GPU step's is only its launch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace neomeg::graph {

class OperatorNode;

class StepProfile {
public:
    // Whether NEOMEG_GRAPH_PROFILE is set to something other than "0" (read once per process).
    static bool enabled();

    explicit StepProfile(size_t num_steps) : m_step_ns(num_steps, 0) {}
    void add_step(size_t step, std::chrono::nanoseconds t) { m_step_ns[step] += t.count(); }
    void add_run(std::chrono::nanoseconds t) {
        m_run_ns += t.count();
        ++m_runs;
    }
    // The table, in milliseconds per run, slowest kind first; `nodes[i]` ran step i.
    std::string summary(const std::vector<const OperatorNode*>& nodes) const;

private:
    std::vector<int64_t> m_step_ns;
    int64_t m_run_ns = 0;
    size_t m_runs = 0;
};

}  // namespace neomeg::graph
