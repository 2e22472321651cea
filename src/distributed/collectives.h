// Broadcast, all-gather, gather, scatter, all-to-all and barrier on Gloo's unbound buffers, for
// Communicator. Gloo's own gloo::broadcast, gloo::gather, ... wait on unbound buffers of their
// own; when a peer's TCP pair fails, Gloo wakes only the buffers of the operations the pair still
// lists as pending (peer_watch.h), so a rank killed in the middle of one of them could leave a
// survivor waiting for the group's whole timeout. These post the same messages (Gloo's binomial
// tree for broadcast, its dissemination barrier, one message per peer for the others) on
// buffers of their own, one per peer, and wait for each through the peer watch: a wait ends as
// soon as the connection to its peer fails, and a peer that finished and left fails no wait for
// another peer's data.
//
// Every rank of `context` calls the same function with the same `slot` (unique among the
// operations in flight), root and byte counts. Each throws gloo's exceptions for a peer's failure
// or for no progress within `waits.timeout`.
#pragma once

#include <gloo/context.h>

#include <cstddef>
#include <cstdint>

#include "peer_watch.h"

namespace neomeg::distributed {

// `bytes` at `in` on rank `root` into `out` on every rank (`in` may be `out`). The root copies
// `in` into `out` after posting its sends (from `in`), while they go out.
void tree_broadcast(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                    uint64_t slot, const Waits& waits);

// tree_broadcast between 2 ranks over two connections: the first half of `buf` through
// `context`, the rest through `reverse` (the same 2 ranks on a device of its own: its own socket
// and loop thread), so that the root's two loop threads write, and the receiver's two read, at
// once. A 16-64 MB broadcast on one socket waits on its one loop thread's wake-ups between socket
// buffers more than it copies.
// From this size Communicator's broadcast between 2 ranks goes two lanes.
constexpr size_t kTwoLaneBroadcastMinBytes = size_t{4} << 20;
void two_lane_broadcast(gloo::Context& context, gloo::Context& reverse, const void* in, void* out,
                        size_t bytes, int root, uint64_t slot, const Waits& waits);

// Rank r's `bytes` at `in` into out + r * bytes on every rank (out holds size * bytes).
void direct_all_gather(gloo::Context& context, const void* in, void* out, size_t bytes,
                       uint64_t slot, const Waits& waits);

// Rank r's `bytes` at `in` into out + r * bytes on `root` (out is read on root only).
void direct_gather(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                   uint64_t slot, const Waits& waits);

// in + r * bytes on `root` into `out` on rank r (in is read on root only).
void direct_scatter(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                    uint64_t slot, const Waits& waits);

// in + p * bytes on rank r into out + r * bytes on rank p, for every pair of ranks.
void direct_all_to_all(gloo::Context& context, const void* in, void* out, size_t bytes,
                       uint64_t slot, const Waits& waits);

// Returns once every rank has called it.
void dissemination_barrier(gloo::Context& context, uint64_t slot, const Waits& waits);

}  // namespace neomeg::distributed
