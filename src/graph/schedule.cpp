#include "schedule.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

#include "neomeg/graph/operator_node.h"
#include "neomeg/graph/var_node.h"

namespace neomeg::graph {

std::vector<OperatorNode*> run_arena_free_nodes_early(
        const std::vector<OperatorNode*>& order,
        const std::function<bool(const OperatorNode*)>& takes_no_arena) {
    std::unordered_map<const OperatorNode*, size_t> position;
    for (size_t i = 0; i < order.size(); ++i)
        position[order[i]] = i;
    // Kahn's algorithm over the given order: two queues of ready nodes by their position, the
    // arena-free one drained first.
    using Ready = std::priority_queue<size_t, std::vector<size_t>, std::greater<>>;
    Ready early, in_order;
    std::vector<size_t> waiting(order.size(), 0);
    auto make_ready = [&](size_t i) { (takes_no_arena(order[i]) ? early : in_order).push(i); };
    for (size_t i = 0; i < order.size(); ++i) {
        for (const VarNode* in : order[i]->inputs())
            waiting[i] += in->owner() && position.count(in->owner());
        if (!waiting[i])
            make_ready(i);
    }
    std::vector<OperatorNode*> result;
    result.reserve(order.size());
    while (!early.empty() || !in_order.empty()) {
        Ready& from = early.empty() ? in_order : early;
        size_t i = from.top();
        from.pop();
        result.push_back(order[i]);
        // users() names a user once per input slot, as `waiting` counted them.
        for (const VarNode* out : order[i]->outputs())
            for (const OperatorNode* user : out->users()) {
                auto it = position.find(user);
                if (it != position.end() && --waiting[it->second] == 0)
                    make_ready(it->second);
            }
    }
    return result;
}

std::vector<OperatorNode*> run_source_nodes_late(
        const std::vector<OperatorNode*>& order,
        const std::function<bool(const OperatorNode*)>& movable) {
    std::unordered_map<const OperatorNode*, size_t> position;
    for (size_t i = 0; i < order.size(); ++i)
        position[order[i]] = i;
    // Per node, the sources to run just before it, in their order.
    std::vector<std::vector<OperatorNode*>> before(order.size());
    std::vector<bool> moved(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const OperatorNode* node = order[i];
        bool source = std::none_of(
                node->inputs().begin(), node->inputs().end(),
                [&](const VarNode* in) { return in->owner() && position.count(in->owner()); });
        if (!source || !movable(node))
            continue;
        size_t first = order.size();
        for (const VarNode* out : node->outputs())
            for (const OperatorNode* user : out->users())
                if (auto it = position.find(user); it != position.end())
                    first = std::min(first, it->second);
        if (first == order.size() || first == i + 1)
            continue;  // read by no node (a graph output), or already next to its reader
        before[first].push_back(order[i]);
        moved[i] = true;
    }
    std::vector<OperatorNode*> result;
    result.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        result.insert(result.end(), before[i].begin(), before[i].end());
        if (!moved[i])
            result.push_back(order[i]);
    }
    return result;
}

}  // namespace neomeg::graph
