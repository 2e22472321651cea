// NeoMeg's all-reduce over TcpLinks: the ranks exchange whole inputs when they are small (one
// round trip), and run a ring (reduce-scatter, then all-gather) when they are large. Unlike
// gloo::allreduce, neither copies the input into the output first: the first ring step sends
// from the input, each reduction writes input (op) received into the output, and the
// all-gather receives straight into the output.
#pragma once

#include <chrono>
#include <cstddef>

#include "tcp_links.h"

namespace neomeg::distributed::detail {

// c[i] = a[i] (op) b[i] for n elements; c may be a or b.
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

struct AllReduceArgs {
    const void* in;
    void* out;  // may be `in`
    size_t count;
    size_t elem_size;
    ReduceFn reduce;
    TcpLinks::Clock::time_point deadline;
};

// At or below this many bytes the ranks exchange whole inputs; above it, the ring.
constexpr size_t kExchangeMaxBytes = size_t{256} << 10;
// The ring reduces a received chunk in segments of at most this size, each while the kernel
// moves the next ones (and while it is still in cache).
constexpr size_t kRingSegmentBytes = size_t{1} << 20;

// Every rank sends its input to every other rank and reduces the n inputs in rank order, so
// that all ranks compute the same bits.
void exchange_all_reduce(TcpLinks& links, const AllReduceArgs& args);

// Each chunk is reduced by one rank and copied to the others, so all ranks get the same bits.
void ring_all_reduce(TcpLinks& links, const AllReduceArgs& args,
                     size_t segment_bytes = kRingSegmentBytes);

// Chooses by size; a single rank copies.
void all_reduce(TcpLinks& links, const AllReduceArgs& args);

}  // namespace neomeg::distributed::detail
