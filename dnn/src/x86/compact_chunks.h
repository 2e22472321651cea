// Stream compaction (CondTake, NonZero) split across OpenMP threads in two passes: each thread
// counts what its chunk of the flat elements keeps, a prefix sum gives each chunk its first output
// position, and each thread writes its chunk from there, so the output keeps row-major order.
// Below the threading grain one pass writes everything. Files including this compile with
// OpenMP's flags (parallel.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {

// count(begin, end) returns how many of flat elements [begin, end) are kept; write(begin, end,
// first) writes them from output position `first` and returns how many it wrote. Returns the
// number kept.
template <class Count, class Write>
size_t compact_chunks(size_t total, Count&& count, Write&& write) {
    size_t chunks = std::min<size_t>(static_cast<size_t>(omp_get_max_threads()),
                                     std::max<size_t>(total / kParallelGrain, 1));
    if (chunks <= 1)
        return write(size_t{0}, total, size_t{0});
    size_t step = (total + chunks - 1) / chunks;
    auto range = [&](size_t c) {
        return std::pair{std::min(total, c * step), std::min(total, (c + 1) * step)};
    };
    std::vector<size_t> first(chunks + 1, 0);
    parallel_ranges(chunks, chunks * kParallelGrain, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t c = b; c < e; ++c) {
            auto [lo, hi] = range(c);
            first[c + 1] = count(lo, hi);
        }
    });
    for (size_t c = 0; c < chunks; ++c)
        first[c + 1] += first[c];
    parallel_ranges(chunks, chunks * kParallelGrain, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t c = b; c < e; ++c) {
            auto [lo, hi] = range(c);
            write(lo, hi, first[c]);
        }
    });
    return first[chunks];
}

}  // namespace neomeg::dnn::x86
