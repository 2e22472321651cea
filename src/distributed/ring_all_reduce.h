// The all-reduce of Communicator, as a ring on Gloo's transport (unbound buffers). Gloo's own
// gloo::allreduce first copies an input buffer into the output, a pass over the data that an
// out-of-place all-reduce (every F.distributed.all_reduce_sum) paid on top of the ring; this one
// reads the rank's contribution from the input where it reduces and sends, so in place and out
// of place move the same bytes.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neomeg::distributed {

// c[i] = a[i] (op) b[i] for n elements; c may be a or b.
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

// Reduces `count` elements of `elem_size` bytes over every rank of `context` into `out` (which
// may be `in`). Messages use `slot`, the same on every rank and unique among the operations in
// flight; `scratch` is reused between calls. Throws gloo's exceptions (a peer's failure, or no
// progress within `timeout`).
void ring_all_reduce(gloo::Context& context, const void* in, void* out, size_t count,
                     size_t elem_size, ReduceFn reduce, uint64_t slot,
                     std::chrono::milliseconds timeout, std::vector<std::byte>& scratch);

}  // namespace neomeg::distributed
