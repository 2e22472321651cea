#include "neomeg/graph/memory_planner.h"

#include <algorithm>
#include <limits>
#include <map>

#include "neomeg/dnn/errors.h"

namespace neomeg::graph {

MemoryPlan plan_memory(std::span<const BufferRequest> requests, size_t alignment) {
    NM_THROW_IF(alignment == 0 || (alignment & (alignment - 1)), ParamError,
                "plan_memory: alignment ", alignment, " is not a power of two");
    auto align = [&](size_t n) { return (n + alignment - 1) & ~(alignment - 1); };
    MemoryPlan plan;
    plan.offsets.assign(requests.size(), 0);
    std::vector<size_t> order;
    for (size_t i = 0; i < requests.size(); ++i) {
        const BufferRequest& r = requests[i];
        NM_THROW_IF(r.end < r.begin, ParamError, "plan_memory: buffer ", i, " ends at step ", r.end,
                    " before it begins at step ", r.begin);
        if (r.size)
            order.push_back(i);
        plan.total_bytes += align(r.size);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (requests[a].size != requests[b].size)
            return requests[a].size > requests[b].size;
        return requests[a].begin < requests[b].begin;
    });

    struct Placed {
        size_t offset, size, begin, end;
    };
    std::vector<Placed> placed;
    std::vector<const Placed*> conflicts;
    for (size_t i : order) {
        const BufferRequest& r = requests[i];
        size_t size = align(r.size);
        conflicts.clear();
        for (const Placed& p : placed)
            if (p.begin <= r.end && r.begin <= p.end)
                conflicts.push_back(&p);
        std::sort(conflicts.begin(), conflicts.end(),
                  [](const Placed* a, const Placed* b) { return a->offset < b->offset; });
        size_t cursor = 0, best = std::numeric_limits<size_t>::max();
        size_t best_gap = std::numeric_limits<size_t>::max();
        for (const Placed* p : conflicts) {
            if (p->offset > cursor) {
                size_t gap = p->offset - cursor;
                if (gap >= size && gap < best_gap) {
                    best = cursor;
                    best_gap = gap;
                }
            }
            cursor = std::max(cursor, p->offset + p->size);
        }
        size_t offset = best != std::numeric_limits<size_t>::max() ? best : cursor;
        placed.push_back({offset, size, r.begin, r.end});
        plan.offsets[i] = offset;
        plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    }

    // Bytes live at each step: +size where a buffer begins, -size after it ends.
    std::map<size_t, ptrdiff_t> delta;
    for (const BufferRequest& r : requests) {
        delta[r.begin] += static_cast<ptrdiff_t>(align(r.size));
        delta[r.end + 1] -= static_cast<ptrdiff_t>(align(r.size));
    }
    ptrdiff_t live = 0;
    for (const auto& [step, d] : delta) {
        live += d;
        plan.live_peak_bytes = std::max(plan.live_peak_bytes, static_cast<size_t>(live));
    }
    return plan;
}

}  // namespace neomeg::graph
