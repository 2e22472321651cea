// The all-reduce of Communicator on Gloo's transport (unbound buffers). Gloo's own gloo::allreduce
// first copies an input buffer into the output, a pass over the data that an out-of-place
// all-reduce (every F.distributed.all_reduce_sum) paid on top of the ring; this one reads the
// rank's contribution from the input where it reduces and sends, so in place and out of place
// move the same bytes. Small messages between 2 ranks are one direct exchange instead of the
// ring's two steps, large ones two lanes (one context per direction). Every rank's first message
// carries what it reduces (count, element size, the caller's code of dtype and op), so ranks that
// disagree get an error, not a crash in Gloo's event loop (a message larger than the receive posted
// for it aborts the process there).
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "peer_watch.h"

namespace neomeg::distributed {

// c[i] = a[i] (op) b[i] for n elements; c may be a or b.
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

// What every rank of an all-reduce must agree on.
struct AllReduceSignature {
    uint64_t count = 0;      // elements
    uint32_t elem_size = 0;  // bytes per element
    uint32_t code = 0;       // the caller's code of the dtype and the reduce op
    bool operator==(const AllReduceSignature&) const = default;
};

// A peer's signature differs from this rank's (thrown before any data is reduced).
class AllReduceMismatch : public std::invalid_argument {
public:
    AllReduceMismatch(int peer, AllReduceSignature mine, AllReduceSignature theirs)
        : std::invalid_argument("all_reduce: the ranks' inputs differ"),
          peer(peer),
          mine(mine),
          theirs(theirs) {}
    int peer;
    AllReduceSignature mine, theirs;
};

// Messages up to this size between 2 ranks go as one exchange (the ring takes 2 steps, each a
// round of Gloo's receive-ready notice and the data), and the scratch holds one such message
// for each direction. Above it the exchange's extra work (a copy of the input into the message,
// the peer's half reduced too) costs more than the round it saves: measured on a loaded 2-core
// machine, back-to-back all-reduces of 256 KB ran 1.6x faster direct, 512 KB the same either
// way, 1 MB 2x faster as the ring.
inline constexpr size_t kDirectAllReduceMaxBytes = size_t{512} << 10;

// Messages of at least this size between 2 ranks that have a second context go two lanes (each
// rank's data through its own context, pipelined reduce-scatter and all-gather): 1.2-2x faster
// at 64 MB on the loaded 2-core machine, the same at 32 MB, slower below (the second context's
// loop thread adds wake-ups that a smaller message does not repay).
inline constexpr size_t kTwoLaneAllReduceMinBytes = size_t{32} << 20;

// Reduces `sig.count` elements of `sig.elem_size` bytes over every rank of `context` into `out`
// (which may be `in`). `reverse`, where not null, is a second context over the same 2 ranks
// (its own device), which carries rank 1's data of the two-lane all-reduce. Messages use `slot`,
// the same on every rank and unique among the operations in flight; `scratch` is reused between
// calls. Throws AllReduceMismatch when a peer's signature differs, gloo's exceptions for a peer's
// failure (as soon as `waits.watch` sees it) or no progress within `waits.timeout`.
// Where `root` is a rank, a reduce: the ring's all-gather is replaced by each rank sending the
// chunk it reduced to `root`, and only root's `out` holds the result (every rank's `out` is
// written: the others' is scratch of the same size). Root's result is the all-reduce's, bit for
// bit.
void ring_all_reduce(gloo::Context& context, gloo::Context* reverse, const void* in, void* out,
                     const AllReduceSignature& sig, ReduceFn reduce, uint64_t slot,
                     const Waits& waits, std::vector<std::byte>& scratch, int root = -1);

}  // namespace neomeg::distributed
