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

// This rank writes `prefix` + "<rank>" (with `value`) and waits until `deadline` for the other
// ranks' keys; returns the ranks still missing then (empty when all came).
std::vector<int> meet(Store& store, const std::string& prefix, int rank, int size,
                      Clock::time_point deadline, const std::vector<char>& value = {});

// "127.0.0.1:40125": the local address of every IPv4 or IPv6 socket this process has open
// (Linux's /proc/self/fd; none elsewhere), one a line. A rank's transport sockets are among
// them, so a peer can tell which rank an address in a transport error belongs to: the listening
// socket a peer connected to, or the connecting socket a peer accepted.
std::vector<char> own_socket_addresses();

// The "host:port" addresses in a transport error ("Read error [127.0.0.1]:40125: ..."), each
// also with its port's bytes swapped (see the definition).
std::vector<std::string> addresses_in(const std::string& message);

}  // namespace neomeg::distributed::rendezvous
