// The collectives of collectives.h. Each message gets a buffer of its own (several may cover the
// same memory), so that each wait takes the completion of its own peer's message: a buffer
// counts completions, not whose they are, and a wait for one peer that took another's would
// leave the next wait waiting for a peer that is gone, unwatched.
#include "collectives.h"

#include <gloo/transport/unbound_buffer.h>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace neomeg::distributed {

namespace {

using gloo::transport::UnboundBuffer;

int mod(int a, int n) {
    return ((a % n) + n) % n;
}

// Posted messages, each with the peer it goes to or comes from.
struct Posted {
    std::vector<std::pair<int, std::unique_ptr<UnboundBuffer>>> sends, recvs;

    void send(gloo::Context& context, const void* p, size_t bytes, int peer, uint64_t slot) {
        auto buf = context.createUnboundBuffer(const_cast<void*>(p), bytes);
        buf->send(peer, slot);
        sends.emplace_back(peer, std::move(buf));
    }
    void recv(gloo::Context& context, void* p, size_t bytes, int peer, uint64_t slot) {
        auto buf = context.createUnboundBuffer(p, bytes);
        buf->recv(peer, slot);
        recvs.emplace_back(peer, std::move(buf));
    }
    void wait_recvs(const Waits& waits) {
        for (auto& [peer, buf] : recvs)
            waits.watch.wait_recv(*buf, peer, waits.timeout);
    }
    void wait_sends(const Waits& waits) {
        for (auto& [peer, buf] : sends)
            waits.watch.wait_send(*buf, peer, waits.timeout);
    }
};

void copy(void* dst, const void* src, size_t bytes) {
    if (dst != src && bytes)
        std::memcpy(dst, src, bytes);
}

}  // namespace

// Gloo's binomial tree (gloo/broadcast.cc): with ranks renumbered so that root is 0, rank v > 0
// receives from v less its highest set bit, then sends to v + 2^i for every 2^i above that bit,
// in increasing order. The data goes down log2(size) levels, each rank sending it at most
// log2(size) times.
void tree_broadcast(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                    uint64_t slot, const Waits& waits) {
    const int n = context.size;
    if (bytes == 0)
        return;
    const int v = mod(context.rank - root, n);
    int bit = 1;  // the lowest power of two above v's highest set bit
    while (bit <= v)
        bit <<= 1;
    Posted posted;
    const void* from = in;
    if (v > 0) {
        posted.recv(context, out, bytes, (v - bit / 2 + root) % n, slot);
        posted.wait_recvs(waits);
        from = out;
    }
    for (; v + bit < n; bit <<= 1)
        posted.send(context, from, bytes, (v + bit + root) % n, slot);
    if (v == 0)
        copy(out, in, bytes);
    posted.wait_sends(waits);
}

void two_lane_broadcast(gloo::Context& context, gloo::Context& reverse, const void* in, void* out,
                        size_t bytes, int root, uint64_t slot, const Waits& waits) {
    if (bytes == 0)
        return;
    const int peer = 1 - context.rank;
    const size_t half = bytes / 2;
    Posted posted;
    if (context.rank == root) {
        const auto* p = static_cast<const std::byte*>(in);
        posted.send(context, p, half, peer, slot);
        posted.send(reverse, p + half, bytes - half, peer, slot);
        copy(out, in, bytes);
        posted.wait_sends(waits);
    } else {
        auto* p = static_cast<std::byte*>(out);
        posted.recv(context, p, half, peer, slot);
        posted.recv(reverse, p + half, bytes - half, peer, slot);
        posted.wait_recvs(waits);
    }
}

// Every rank sends its part to every other rank, starting with its right neighbour so that not
// everyone writes to rank 0 first. The same bytes as Gloo's ring (gloo/allgather.cc: size - 1
// parts in and out of each rank), in one round instead of size - 1 dependent ones.
void direct_all_gather(gloo::Context& context, const void* in, void* out, size_t bytes,
                       uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    auto* out_p = static_cast<std::byte*>(out);
    if (bytes == 0)
        return;
    Posted posted;
    for (int i = 1; i < n; ++i) {
        int from = mod(r - i, n);
        posted.recv(context, out_p + static_cast<size_t>(from) * bytes, bytes, from, slot);
    }
    for (int i = 1; i < n; ++i)
        posted.send(context, in, bytes, mod(r + i, n), slot);
    copy(out_p + static_cast<size_t>(r) * bytes, in, bytes);
    posted.wait_recvs(waits);
    posted.wait_sends(waits);
}

void direct_gather(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                   uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    if (bytes == 0)
        return;
    Posted posted;
    if (r != root) {
        posted.send(context, in, bytes, root, slot);
        posted.wait_sends(waits);
        return;
    }
    auto* out_p = static_cast<std::byte*>(out);
    for (int p = 0; p < n; ++p)
        if (p != r)
            posted.recv(context, out_p + static_cast<size_t>(p) * bytes, bytes, p, slot);
    copy(out_p + static_cast<size_t>(r) * bytes, in, bytes);
    posted.wait_recvs(waits);
}

void direct_scatter(gloo::Context& context, const void* in, void* out, size_t bytes, int root,
                    uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    if (bytes == 0)
        return;
    Posted posted;
    if (r != root) {
        posted.recv(context, out, bytes, root, slot);
        posted.wait_recvs(waits);
        return;
    }
    const auto* in_p = static_cast<const std::byte*>(in);
    for (int i = 1; i < n; ++i) {
        int to = mod(r + i, n);
        posted.send(context, in_p + static_cast<size_t>(to) * bytes, bytes, to, slot);
    }
    copy(out, in_p + static_cast<size_t>(r) * bytes, bytes);
    posted.wait_sends(waits);
}

// Gloo's order (gloo/alltoall.cc): in step i, rank r sends to r + i and receives from r - i.
void direct_all_to_all(gloo::Context& context, const void* in, void* out, size_t bytes,
                       uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    if (bytes == 0)
        return;
    const auto* in_p = static_cast<const std::byte*>(in);
    auto* out_p = static_cast<std::byte*>(out);
    Posted posted;
    for (int i = 1; i < n; ++i) {
        int from = mod(r - i, n), to = mod(r + i, n);
        posted.recv(context, out_p + static_cast<size_t>(from) * bytes, bytes, from, slot);
        posted.send(context, in_p + static_cast<size_t>(to) * bytes, bytes, to, slot);
    }
    copy(out_p + static_cast<size_t>(r) * bytes, in_p + static_cast<size_t>(r) * bytes, bytes);
    posted.wait_recvs(waits);
    posted.wait_sends(waits);
}

// Gloo's dissemination barrier (gloo/barrier.cc; Hensgen, Finkel and Manber, 1988): in round
// d = 1, 2, 4, ..., an empty message to rank r + d and one from rank r - d. After the last round
// every rank has heard, directly or not, from every other.
void dissemination_barrier(gloo::Context& context, uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    for (int d = 1; d < n; d <<= 1) {
        Posted posted;
        posted.recv(context, nullptr, 0, mod(r - d, n), slot);
        posted.send(context, nullptr, 0, mod(r + d, n), slot);
        posted.wait_recvs(waits);
        posted.wait_sends(waits);
    }
}

}  // namespace neomeg::distributed
