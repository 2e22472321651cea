#include "all_reduce_algorithms.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace neomeg::distributed::detail {

void exchange_all_reduce(TcpLinks& links, const AllReduceArgs& a) {
    const int n = links.size(), r = links.rank();
    const size_t bytes = a.count * a.elem_size;
    // Peer p's input lands in slot p (p < r) or p - 1. With out == in, this rank's input is kept
    // in the last slot: the rank-order reduction below writes out before it reads rank r's part.
    const bool keep_own = a.out == a.in && r >= 2;
    std::vector<std::byte> scratch(bytes * static_cast<size_t>(n - 1 + (keep_own ? 1 : 0)));
    auto slot = [&](int p) {
        return scratch.data() + bytes * static_cast<size_t>(p < r ? p : p - 1);
    };
    const void* own = a.in;
    if (keep_own) {
        own = scratch.data() + bytes * static_cast<size_t>(n - 1);
        std::memcpy(scratch.data() + bytes * static_cast<size_t>(n - 1), a.in, bytes);
    }
    std::vector<TcpLinks::Piece> sends, recvs;
    auto* in = static_cast<std::byte*>(const_cast<void*>(a.in));
    for (int p = 0; p < n; ++p) {
        if (p == r)
            continue;
        sends.push_back({p, in, bytes});
        recvs.push_back({p, slot(p), bytes});
    }
    links.transfer(sends, recvs, nullptr, a.deadline);
    auto part = [&](int p) -> const void* { return p == r ? own : slot(p); };
    a.reduce(a.out, part(0), part(1), a.count);
    for (int p = 2; p < n; ++p)
        a.reduce(a.out, a.out, part(p), a.count);
}

void ring_all_reduce(TcpLinks& links, const AllReduceArgs& a, size_t segment_bytes) {
    const int n = links.size(), r = links.rank();
    const size_t esize = a.elem_size;
    const size_t chunk = (a.count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
    const size_t seg = std::max<size_t>(1, segment_bytes / esize);
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto* in = static_cast<std::byte*>(const_cast<void*>(a.in));
    auto* out = static_cast<std::byte*>(a.out);
    // Chunk c (taken modulo n) as [begin, end) in elements, clipped to the data.
    auto bounds = [&](int c) {
        size_t k = static_cast<size_t>(((c % n) + n) % n);
        size_t begin = std::min(a.count, k * chunk);
        return std::pair{begin, std::min(a.count, begin + chunk)};
    };
    // Segments arrive straight into the output, where the reduction reads them back while the
    // kernel fills the next ones; in place (out == in) they must not overwrite the input before
    // it is read, so each goes through one buffer instead, received only after its reduction.
    const bool in_place = a.out == a.in;
    std::vector<std::byte> tmp(in_place ? std::min(seg, chunk) * esize : 0);
    std::vector<TcpLinks::Piece> sends(1), recvs;

    // Reduce-scatter: at step s this rank adds its input to the partial sum of chunk r - s - 1
    // that rank r - 1 sends, and sends on chunk r - s (its own input at step 0, the sum it made
    // at step s - 1 after). After n - 1 steps it holds the full reduction of chunk r + 1.
    for (int s = 0; s < n - 1; ++s) {
        auto [sb, se] = bounds(r - s);
        sends[0] = {next, (s == 0 ? in : out) + sb * esize, (se - sb) * esize};
        auto [rb, re] = bounds(r - s - 1);
        recvs.clear();
        for (size_t b = rb; b < re; b += seg)
            recvs.push_back({prev, in_place ? tmp.data() : out + b * esize,
                             (std::min(re, b + seg) - b) * esize});
        auto reduce_segment = [&](size_t i) {
            size_t off = (rb + i * seg) * esize;
            a.reduce(out + off, in + off, recvs[i].ptr, recvs[i].bytes / esize);
        };
        links.transfer(sends, recvs, reduce_segment, a.deadline, !in_place);
    }
    // All-gather: the reduced chunks travel around the ring, straight into the output.
    for (int t = 0; t < n - 1; ++t) {
        auto [sb, se] = bounds(r + 1 - t);
        auto [rb, re] = bounds(r - t);
        sends[0] = {next, out + sb * esize, (se - sb) * esize};
        recvs.assign(1, {prev, out + rb * esize, (re - rb) * esize});
        links.transfer(sends, recvs, nullptr, a.deadline);
    }
}

void all_reduce(TcpLinks& links, const AllReduceArgs& args) {
    if (args.count == 0)
        return;
    if (links.size() == 1) {
        if (args.out != args.in)
            std::memcpy(args.out, args.in, args.count * args.elem_size);
        return;
    }
    if (args.count * args.elem_size <= kExchangeMaxBytes)
        exchange_all_reduce(links, args);
    else
        ring_all_reduce(links, args);
}

}  // namespace neomeg::distributed::detail
