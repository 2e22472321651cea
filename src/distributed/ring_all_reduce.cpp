// The all-reduce on Gloo's unbound buffers. Between 2 ranks, a message of at most
// kDirectAllReduceMaxBytes is one exchange: each rank sends its signature and input in one
// message and reduces the peer's with its own in rank order. Between 2 ranks with a second
// context, a message of at least kTwoLaneAllReduceMinBytes goes two lanes (two_lane_all_reduce
// below). Otherwise a ring: each rank sends
// its signature to its right neighbour and checks its left one's, then a reduce-scatter (n - 1
// steps, rank r ends with chunk r + 1 reduced) and an all-gather (n - 1 steps). The
// reduce-scatter adds the rank's own input to what its left neighbour sent, so the output is
// written once per element and the input is never copied into it first.
//
// Why the direct exchange: Gloo's TCP pair writes a message only once the receiver's
// "receive posted" notice has come back, so each ring step costs a round of notice and data,
// and on a loaded machine each round can wait for the event-loop thread's next time slice. A
// small message is all latency: one round instead of two.
#include "ring_all_reduce.h"

#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "peer_watch.h"

namespace neomeg::distributed {

namespace {

using gloo::transport::UnboundBuffer;

// Ring messages of at most 1 MB, two of them received ahead of the reduction: one arrives while
// the other is reduced, and a segment is still in cache when it is reduced.
constexpr size_t kMaxSegmentBytes = size_t{1} << 20;
constexpr size_t kRecvsInFlight = 2;
// The two-lane all-reduce receives an in-place all-reduce's segments into scratch, this many
// ahead of the reduction (an out-of-place one receives into the output, every segment posted at
// once): more than the ring's two, since its sender has nothing else to wait for.
constexpr size_t kTwoLaneRecvsInFlight = 8;

// A rank's first message starts with this; the receive posted for it holds a direct message
// whole, so whatever the peer chose, its first message fits.
struct Header {
    uint64_t magic;
    AllReduceSignature sig;
};
constexpr uint64_t kMagic = 0x4e4d415252454431;  // "NMARRED1"
constexpr size_t kHeaderBytes = 64;              // the payload after it stays aligned
constexpr size_t kFirstRecvBytes = kHeaderBytes + kDirectAllReduceMaxBytes;
static_assert(sizeof(Header) <= kHeaderBytes);

struct Range {
    size_t begin, count;  // in elements
};

// Chunk c of `count` elements split into n: the first count % n chunks hold one element more.
Range chunk(size_t count, int n, int c) {
    size_t q = count / static_cast<size_t>(n), rem = count % static_cast<size_t>(n);
    auto uc = static_cast<size_t>(c);
    return {uc * q + std::min(uc, rem), q + (uc < rem ? 1 : 0)};
}

int mod(int a, int n) {
    return ((a % n) + n) % n;
}

// Waits for `n` sends to `peer`.
void wait_sends(UnboundBuffer& buf, size_t n, int peer, const Waits& waits) {
    for (size_t i = 0; i < n; ++i)
        waits.watch.wait_send(buf, peer, waits.timeout);
}

void wait_recv(UnboundBuffer& buf, int peer, const Waits& waits) {
    waits.watch.wait_recv(buf, peer, waits.timeout);
}

void write_header(std::byte* dst, const AllReduceSignature& sig) {
    Header h{kMagic, sig};
    std::memcpy(dst, &h, sizeof h);
}

// The peer's first message (received at `src`) must carry this rank's signature.
void check_header(const std::byte* src, const AllReduceSignature& sig, int peer) {
    Header h;
    std::memcpy(&h, src, sizeof h);
    if (h.magic != kMagic)
        h.sig = AllReduceSignature{};
    if (!(h.sig == sig))
        throw AllReduceMismatch(peer, sig, h.sig);
}

// 2 ranks, one message each way: [header | input], reduced in rank order so that both ranks
// compute x0 (op) x1 (max and min keep the same NaN that way).
void direct_all_reduce(gloo::Context& context, const void* in, void* out,
                       const AllReduceSignature& sig, ReduceFn reduce, uint64_t slot,
                       const Waits& waits, std::vector<std::byte>& scratch) {
    const int peer = 1 - context.rank;
    const size_t bytes = sig.count * sig.elem_size;
    if (scratch.size() < 2 * kFirstRecvBytes)
        scratch.resize(2 * kFirstRecvBytes);
    std::byte* received = scratch.data();
    std::byte* message = scratch.data() + kFirstRecvBytes;
    auto recv_buf = context.createUnboundBuffer(received, kFirstRecvBytes);
    recv_buf->recv(peer, slot, 0, kFirstRecvBytes);
    write_header(message, sig);
    std::memcpy(message + kHeaderBytes, in, bytes);
    auto send_buf = context.createUnboundBuffer(message, kHeaderBytes + bytes);
    send_buf->send(peer, slot, 0, kHeaderBytes + bytes);
    wait_recv(*recv_buf, peer, waits);
    check_header(received, sig, peer);
    const std::byte* theirs = received + kHeaderBytes;
    if (context.rank == 0)
        reduce(out, in, theirs, sig.count);
    else
        reduce(out, theirs, in, sig.count);
    wait_sends(*send_buf, 1, peer, waits);
}

// Sends this rank's signature to `right` and checks the one `left` sent, before any receive
// sized by this rank's count is posted.
void exchange_headers(gloo::Context& context, int right, int left, const AllReduceSignature& sig,
                      uint64_t slot, const Waits& waits, std::byte* first_recv) {
    auto first = context.createUnboundBuffer(first_recv, kFirstRecvBytes);
    first->recv(left, slot, 0, kFirstRecvBytes);
    std::byte header[kHeaderBytes] = {};
    write_header(header, sig);
    auto header_buf = context.createUnboundBuffer(header, kHeaderBytes);
    header_buf->send(right, slot, 0, kHeaderBytes);
    wait_recv(*first, left, waits);
    check_header(first_recv, sig, left);
    wait_sends(*header_buf, 1, right, waits);
}

// 2 ranks, large messages: the ring's reduce-scatter and all-gather pipelined per segment. Rank r
// reduces chunk r (its input and the peer's, in rank order) and sends each reduced segment on at
// once, while the peer's input for chunk r still arrives; the all-gather receives go straight
// into the output. This rank's messages go through `to_peer` and the peer's through
// `from_peer`, two contexts with their own sockets and event-loop threads: Gloo's pair reads
// and writes its socket under one lock, so on one pair the two directions take turns (and the
// loop thread spins on the lock while a large write holds it); on two, one rank's writing and
// reading run at once.
// The signatures go through `context`, as every algorithm's do, so that ranks that disagree
// (and so may have chosen different algorithms) meet there.
void two_lane_all_reduce(gloo::Context& context, gloo::Context& reverse, const void* in, void* out,
                         const AllReduceSignature& sig, ReduceFn reduce, uint64_t slot,
                         const Waits& waits, std::vector<std::byte>& scratch) {
    const int r = context.rank, peer = 1 - r;
    // Context 0 carries rank 0's data, `reverse` rank 1's.
    gloo::Context& to_peer = r == 0 ? context : reverse;
    gloo::Context& from_peer = r == 0 ? reverse : context;
    const size_t elem_size = sig.elem_size, bytes = sig.count * elem_size;
    const size_t seg_elems = std::max<size_t>(1, kMaxSegmentBytes / elem_size);
    const Range own = chunk(sig.count, 2, r), theirs = chunk(sig.count, 2, peer);
    const bool in_place = in == out;
    // In place, the peer's input for chunk r cannot land in the output (it holds this rank's):
    // a window of scratch segments takes it.
    const size_t seg_bytes = std::min(seg_elems, own.count) * elem_size;
    const size_t window = in_place ? kTwoLaneRecvsInFlight : 0;
    if (scratch.size() < kFirstRecvBytes + seg_bytes * window)
        scratch.resize(kFirstRecvBytes + seg_bytes * window);
    exchange_headers(context, peer, peer, sig, slot, waits, scratch.data());

    // The all-gather's messages get the next slot (Gloo's slots leave the low bits to a
    // collective's own messages), so that they never match a reduce-scatter receive.
    const uint64_t gather_slot = slot + 1;
    auto* out_p = static_cast<std::byte*>(out);
    const auto* in_p = static_cast<const std::byte*>(in);
    std::byte* segments = scratch.data() + kFirstRecvBytes;
    // One buffer per context and per kind of receive: a buffer counts its completions, and
    // each wait below must count only its own kind.
    auto gathered = from_peer.createUnboundBuffer(out, bytes);
    auto scattered = in_place ? from_peer.createUnboundBuffer(segments, seg_bytes * window)
                              : from_peer.createUnboundBuffer(out, bytes);
    auto reduced = to_peer.createUnboundBuffer(out, bytes);
    std::unique_ptr<UnboundBuffer> in_owner;
    if (!in_place)
        in_owner = to_peer.createUnboundBuffer(const_cast<void*>(in), bytes);
    UnboundBuffer& in_buf = in_owner ? *in_owner : *reduced;

    auto segment = [&](Range c, size_t k) {
        return Range{c.begin + k * seg_elems, std::min(seg_elems, c.count - k * seg_elems)};
    };
    const size_t n_own = (own.count + seg_elems - 1) / seg_elems;
    const size_t n_theirs = (theirs.count + seg_elems - 1) / seg_elems;
    auto post_scatter_recv = [&](size_t k) {
        Range s = segment(own, k);
        size_t at = in_place ? (k % window) * seg_bytes : s.begin * elem_size;
        scattered->recv(peer, slot, at, s.count * elem_size);
    };
    for (size_t k = 0; k < n_theirs; ++k) {
        Range s = segment(theirs, k);
        gathered->recv(peer, gather_slot, s.begin * elem_size, s.count * elem_size);
    }
    for (size_t k = 0; k < (in_place ? std::min(n_own, window) : n_own); ++k)
        post_scatter_recv(k);
    // In place, the peer's all-gather writes chunk `theirs` only after it has received all of
    // this rank's input for it, so these sends have read it by then.
    for (size_t k = 0; k < n_theirs; ++k) {
        Range s = segment(theirs, k);
        in_buf.send(peer, slot, s.begin * elem_size, s.count * elem_size);
    }
    for (size_t k = 0; k < n_own; ++k) {
        wait_recv(*scattered, peer, waits);
        Range s = segment(own, k);
        std::byte* dst = out_p + s.begin * elem_size;
        const std::byte* mine = in_p + s.begin * elem_size;
        const std::byte* got = in_place ? segments + (k % window) * seg_bytes : dst;
        if (r == 0)
            reduce(dst, mine, got, s.count);
        else
            reduce(dst, got, mine, s.count);
        if (in_place && k + window < n_own)
            post_scatter_recv(k + window);
        reduced->send(peer, gather_slot, s.begin * elem_size, s.count * elem_size);
    }
    for (size_t k = 0; k < n_theirs; ++k)
        wait_recv(*gathered, peer, waits);
    // In place, in_buf is `reduced`: its completions count both kinds of send.
    wait_sends(in_buf, n_theirs, peer, waits);
    wait_sends(*reduced, n_own, peer, waits);
}

// A reduce's end of the ring: rank r holds chunk r + 1 reduced and sends it to `root`, which
// receives every other rank's chunk straight into its output. The messages get the next slot,
// so that none can match a receive of the reduce-scatter. One buffer per peer: each wait is for
// its peer alone (peer_watch.h).
void gather_reduced(gloo::Context& context, void* out, const AllReduceSignature& sig, int root,
                    uint64_t slot, const Waits& waits) {
    const int n = context.size, r = context.rank;
    const size_t elem_size = sig.elem_size;
    auto* out_p = static_cast<std::byte*>(out);
    const uint64_t gather_slot = slot + 1;
    if (r != root) {
        Range c = chunk(sig.count, n, mod(r + 1, n));
        if (c.count == 0)
            return;
        auto buf = context.createUnboundBuffer(out_p + c.begin * elem_size, c.count * elem_size);
        buf->send(root, gather_slot);
        wait_sends(*buf, 1, root, waits);
        return;
    }
    std::vector<std::pair<int, std::unique_ptr<UnboundBuffer>>> recvs;
    for (int p = 0; p < n; ++p) {
        Range c = chunk(sig.count, n, mod(p + 1, n));
        if (p == r || c.count == 0)
            continue;
        auto buf = context.createUnboundBuffer(out_p + c.begin * elem_size, c.count * elem_size);
        buf->recv(p, gather_slot);
        recvs.emplace_back(p, std::move(buf));
    }
    for (auto& [p, buf] : recvs)
        wait_recv(*buf, p, waits);
}

}  // namespace

void ring_all_reduce(gloo::Context& context, gloo::Context* reverse, const void* in, void* out,
                     const AllReduceSignature& sig, ReduceFn reduce, uint64_t slot,
                     const Waits& waits, std::vector<std::byte>& scratch, int root) {
    const int n = context.size, r = context.rank;
    const size_t count = sig.count, elem_size = sig.elem_size;
    const size_t bytes = count * elem_size;
    if (n == 1 || count == 0) {
        if (in != out && bytes)
            std::memcpy(out, in, bytes);
        return;
    }
    if (n == 2 && bytes <= kDirectAllReduceMaxBytes) {
        direct_all_reduce(context, in, out, sig, reduce, slot, waits, scratch);
        return;
    }
    // A reduce's root takes half the data from its peer, not all of it from two lanes.
    if (n == 2 && reverse && bytes >= kTwoLaneAllReduceMinBytes && root < 0) {
        two_lane_all_reduce(context, *reverse, in, out, sig, reduce, slot, waits, scratch);
        return;
    }
    const int right = mod(r + 1, n), left = mod(r - 1, n);
    auto out_buf = context.createUnboundBuffer(out, bytes);
    std::unique_ptr<UnboundBuffer> in_owner;
    if (in != out)
        in_owner = context.createUnboundBuffer(const_cast<void*>(in), bytes);
    UnboundBuffer& in_buf = in_owner ? *in_owner : *out_buf;

    // Scratch: the first message's receive, then kRecvsInFlight segments. A segment's receive
    // is posted only once the left neighbour's signature has matched, so it is sized exactly.
    const size_t seg_elems = std::max<size_t>(1, kMaxSegmentBytes / elem_size);
    const size_t seg_bytes = std::min(seg_elems, chunk(count, n, 0).count) * elem_size;
    if (scratch.size() < kFirstRecvBytes + seg_bytes * kRecvsInFlight)
        scratch.resize(kFirstRecvBytes + seg_bytes * kRecvsInFlight);
    std::byte* segments = scratch.data() + kFirstRecvBytes;
    exchange_headers(context, right, left, sig, slot, waits, scratch.data());
    auto tmp = context.createUnboundBuffer(segments, seg_bytes * kRecvsInFlight);

    auto* out_p = static_cast<std::byte*>(out);
    const auto* in_p = static_cast<const std::byte*>(in);
    // Posts one send per segment of `c` from `buf`; returns how many.
    auto send_chunk = [&](UnboundBuffer& buf, Range c) {
        size_t posted = 0;
        for (size_t done = 0; done < c.count; done += seg_elems, ++posted) {
            size_t len = std::min(seg_elems, c.count - done);
            buf.send(right, slot, (c.begin + done) * elem_size, len * elem_size);
        }
        return posted;
    };

    // Reduce-scatter: step s sends chunk r - s (this rank's input at s = 0, a partial sum after)
    // and reduces chunk r - s - 1 from the left neighbour's partial sum and this rank's input.
    for (int s = 0; s < n - 1; ++s) {
        Range rc = chunk(count, n, mod(r - s - 1, n));
        size_t nseg = (rc.count + seg_elems - 1) / seg_elems;
        auto recv_seg = [&](size_t k) {
            size_t len = std::min(seg_elems, rc.count - k * seg_elems);
            tmp->recv(left, slot, (k % kRecvsInFlight) * seg_bytes, len * elem_size);
        };
        for (size_t k = 0; k < std::min(nseg, kRecvsInFlight); ++k)
            recv_seg(k);
        UnboundBuffer& from = s == 0 ? in_buf : *out_buf;
        size_t sends = send_chunk(from, chunk(count, n, mod(r - s, n)));
        for (size_t k = 0; k < nseg; ++k) {
            wait_recv(*tmp, left, waits);
            size_t begin = rc.begin + k * seg_elems;
            size_t len = std::min(seg_elems, rc.count - k * seg_elems);
            reduce(out_p + begin * elem_size, in_p + begin * elem_size,
                   segments + (k % kRecvsInFlight) * seg_bytes, len);
            if (k + kRecvsInFlight < nseg)
                recv_seg(k + kRecvsInFlight);
        }
        wait_sends(from, sends, right, waits);
    }

    if (root >= 0) {
        gather_reduced(context, out, sig, root, slot, waits);
        return;
    }

    // All-gather: step s passes on chunk r + 1 - s (reduced here at s = 0, received after) and
    // receives chunk r - s straight into the output.
    for (int s = 0; s < n - 1; ++s) {
        Range rc = chunk(count, n, mod(r - s, n));
        size_t recvs = 0;
        for (size_t done = 0; done < rc.count; done += seg_elems, ++recvs)
            out_buf->recv(left, slot, (rc.begin + done) * elem_size,
                          std::min(seg_elems, rc.count - done) * elem_size);
        size_t sends = send_chunk(*out_buf, chunk(count, n, mod(r + 1 - s, n)));
        for (size_t k = 0; k < recvs; ++k)
            wait_recv(*out_buf, left, waits);
        wait_sends(*out_buf, sends, right, waits);
    }
}

}  // namespace neomeg::distributed
