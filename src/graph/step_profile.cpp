#include "step_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "neomeg/graph/operator_node.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {

bool StepProfile::enabled() {
    static const bool on = [] {
        const char* v = std::getenv("NEOMEG_GRAPH_PROFILE");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

std::string StepProfile::summary(const std::vector<const OperatorNode*>& nodes) const {
    struct Kind {
        int64_t ns = 0, min_ns = 0;
        size_t steps = 0;
    };
    std::map<std::string, Kind> kinds;
    int64_t in_steps = 0, in_steps_min = 0;
    for (size_t s = 0; s < nodes.size() && s < m_step_ns.size(); ++s) {
        const OpDef& op = nodes[s]->op();
        // An Elemwise's cost depends on its mode far more than other ops' on their params.
        std::string key = op.id() == ops::Elemwise::kId ? op.to_string() : op.name();
        Kind& k = kinds[key];
        // A step that never ran timed (the first run is not timed) has no minimum.
        const int64_t fastest =
                m_min_ns[s] == std::numeric_limits<int64_t>::max() ? 0 : m_min_ns[s];
        k.ns += m_step_ns[s];
        k.min_ns += fastest;
        ++k.steps;
        in_steps += m_step_ns[s];
        in_steps_min += fastest;
    }
    std::vector<std::pair<std::string, Kind>> rows(kinds.begin(), kinds.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    const double runs = static_cast<double>(std::max<size_t>(m_runs, 1));
    auto ms = [&](int64_t ns) { return static_cast<double>(ns) / 1e6 / runs; };
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << "graph profile: " << m_runs << " runs, " << nodes.size() << " steps, " << ms(m_run_ns)
       << " ms per run, of which steps " << ms(in_steps) << " ms, executor "
       << ms(m_run_ns - in_steps) << " ms; the steps' fastest runs sum to "
       << static_cast<double>(in_steps_min) / 1e6 << " ms\n";
    for (const auto& [name, k] : rows)
        os << "  " << ms(k.ns) << " ms (fastest " << static_cast<double>(k.min_ns) / 1e6 << " ms)  "
           << k.steps << " x " << name << "\n";
    return os.str();
}

}  // namespace neomeg::graph
