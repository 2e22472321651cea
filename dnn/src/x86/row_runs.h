// Writing a dense dst one row at a time, each row put together from runs of other rows: Concat of
// contiguous inputs (a row of each per dst row) and Roll of a contiguous src (a row's two halves
// swapped). One sweep over dst, where a copy per input (relayout_copy of each slab) sweeps it once
// per input, each time writing into lines that the previous sweep left partly written. Runs are
// copied by copy_bytes (vector loads and stores; memcpy's rep movsb was 9x slower on a roll's
// runs) or, for a large dst, stream_bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "src/x86/parallel.h"
#include "src/x86/stream_copy_hwy.h"

namespace neomeg::dnn::x86 {

// Bytes [dst_off, dst_off + bytes) of every dst row come from src + (src row) * src_row.
struct RowRun {
    const std::byte* src;
    size_t src_row, dst_off, bytes;
};

// A row at least twice this long is cut into pieces of about this size for the threads (Concat
// along the first axis is one row).
inline constexpr size_t kRunPieceBytes = size_t(256) << 10;

// A dst larger than this is written with non-temporal stores: with its src (as large) it no longer
// fits a 32 MiB last-level cache (a Zen 4 CCD's) and the L2s beside it, so it would not stay cached
// for the next op anyway, and a plain store first reads each line it writes. Up to this size plain
// stores leave dst in the cache for its reader, and on two or more threads they are faster:
// F.concat and F.stack of two (1024, 2048) float32 tensors (16 MiB) took 0.23-0.24 ms at two
// threads with them against 0.31-0.32 streamed (one core's non-temporal stores drain at about 27
// GB/s). One thread still streams from kRunStreamBytes: there the same copy took 0.61-0.68 ms
// streamed against 0.71-0.73 plain in cache and up to 2 ms plain when other work had the cache
// (docs/x86-backend-log.md, "The audit's two-thread concat and stack").
inline constexpr size_t kRunCachedBytes = size_t(16) << 20;
inline constexpr size_t kRunStreamBytes = size_t(12) << 20;

// Fills `rows` dst rows of `row_bytes` bytes each, dense from `dst`, from `runs`, which cover each
// row; row r reads src row src_row_of(r) of every run. Rows (and pieces of long rows) split across
// threads. Non-temporal stores are weakly ordered: each thread fences its own before the caller
// reads dst. Returns whether it streamed.
template <class SrcRowOf>
bool copy_row_runs(std::span<const RowRun> runs, size_t rows, size_t row_bytes, std::byte* dst,
                   SrcRowOf&& src_row_of) {
    const size_t pieces = std::max<size_t>(1, row_bytes / kRunPieceBytes);
    const size_t piece = (row_bytes + pieces - 1) / pieces;
    // The grain counts float32 elements.
    const size_t units = rows * pieces, work = rows * row_bytes / sizeof(float);
    const size_t bytes = rows * row_bytes;
    const bool stream =
            bytes > kRunCachedBytes ||
            (bytes >= kRunStreamBytes && parallel_threads(units, work, kParallelGrain) == 1);
    parallel_ranges(units, work, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t r = u / pieces, p0 = (u % pieces) * piece;
            size_t p1 = std::min(row_bytes, p0 + piece), sr = src_row_of(r);
            std::byte* d = dst + r * row_bytes;
            for (const RowRun& run : runs) {
                size_t lo = std::max(p0, run.dst_off);
                size_t hi = std::min(p1, run.dst_off + run.bytes);
                if (lo < hi && stream)
                    stream_bytes(d + lo, run.src + sr * run.src_row + (lo - run.dst_off), hi - lo);
                else if (lo < hi)
                    copy_bytes(d + lo, run.src + sr * run.src_row + (lo - run.dst_off), hi - lo);
            }
        }
        if (stream)
            stream_fence();
    });
    return stream;
}

}  // namespace neomeg::dnn::x86
