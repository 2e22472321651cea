// The store steps of a group's rendezvous (rendezvous.h) and await_ranks (communicator.h).
#include "rendezvous.h"

#include <algorithm>
#include <cstdio>

namespace neomeg::distributed {

namespace rendezvous {

using Millis = std::chrono::milliseconds;

Millis time_left(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    return std::max(left, Millis(1));
}

std::string seconds(Millis t) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(t.count()) / 1000.0);
    return buf;
}

std::string name_ranks(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

std::vector<size_t> wait_for_keys(Store& store, const std::vector<std::string>& keys,
                                  Clock::time_point deadline) {
    try {
        store.wait(keys, time_left(deadline));
        return {};
    } catch (const StoreTimeout&) {
    }
    // Which ones: each looked at once more.
    std::vector<size_t> missing;
    for (size_t i = 0; i < keys.size(); ++i) {
        try {
            store.wait({keys[i]}, Millis(1));
        } catch (const StoreTimeout&) {
            missing.push_back(i);
        }
    }
    return missing;
}

std::vector<int> meet(Store& store, const std::string& prefix, int rank, int size,
                      Clock::time_point deadline) {
    store.set(prefix + std::to_string(rank), {});
    std::vector<std::string> keys;
    std::vector<int> peers;
    for (int r = 0; r < size; ++r) {
        if (r == rank)
            continue;
        keys.push_back(prefix + std::to_string(r));
        peers.push_back(r);
    }
    std::vector<int> missing;
    for (size_t i : wait_for_keys(store, keys, deadline))
        missing.push_back(peers[i]);
    return missing;
}

}  // namespace rendezvous

void await_ranks(Store& store, const std::string& prefix, int rank, int size,
                 std::chrono::steady_clock::time_point deadline,
                 std::chrono::milliseconds timeout) {
    auto absent = rendezvous::meet(store, prefix + "arrived/", rank, size, deadline);
    if (absent.empty())
        return;
    throw StoreTimeout("distributed rendezvous: rank " + std::to_string(rank) + " of " +
                       std::to_string(size) + " waited " + rendezvous::seconds(timeout) +
                       " (the group's timeout) for " + rendezvous::name_ranks(absent) +
                       " of the group, which never reached the group's first collective (" +
                       (absent.size() == 1 ? "it" : "they") +
                       " raised, died, or called something else)");
}

}  // namespace neomeg::distributed
