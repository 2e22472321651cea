// The store steps of a group's rendezvous, shared by the Gloo and NCCL communicators: waits that
// end at one deadline (the whole rendezvous is bounded by the group's timeout, however many
// steps it takes), and errors that name the ranks that did not come.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "neomeg/distributed/communicator.h"

namespace neomeg::distributed::rendezvous {

using Clock = std::chrono::steady_clock;

// What is left until `deadline`, and at least 1 ms: a store wait past the deadline still looks
// once more (a key that came meanwhile is found).
std::chrono::milliseconds time_left(Clock::time_point deadline);

// "3 s", "0.25 s": a timeout in an error message.
std::string seconds(std::chrono::milliseconds t);

// "rank 1", "ranks 1, 2".
std::string name_ranks(const std::vector<int>& ranks);

// Waits until `deadline` for every key of `keys`; returns the indices of those still missing
// then (empty when all came). Other store errors (a lost server) propagate.
std::vector<size_t> wait_for_keys(Store& store, const std::vector<std::string>& keys,
                                  Clock::time_point deadline);

// This rank writes `prefix` + "<rank>" and waits until `deadline` for the other ranks' keys;
// returns the ranks still missing then (empty when all came).
std::vector<int> meet(Store& store, const std::string& prefix, int rank, int size,
                      Clock::time_point deadline);

}  // namespace neomeg::distributed::rendezvous
