// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/transpose_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>

#include "src/x86/transpose_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The elements the vector loops leave over (the tile's ragged edges), one at a time.
void TransposeScalar(const uint32_t* tile, size_t pitch, size_t j0, size_t nj, size_t i0, size_t ni,
                     uint32_t* dst, ptrdiff_t dst_row) {
    for (size_t i = i0; i < ni; ++i)
        for (size_t j = j0; j < nj; ++j)
            dst[static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j)] =
                    tile[j * pitch + i];
}

// The elements the direct walk's vector loops leave over, one at a time.
template <class T>
void DirectScalar(const T* src, ptrdiff_t src_row, size_t j0, size_t nj, size_t i0, size_t ni,
                  T* dst, ptrdiff_t dst_row) {
    for (size_t i = i0; i < ni; ++i)
        for (size_t j = j0; j < nj; ++j)
            dst[static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j)] =
                    src[static_cast<ptrdiff_t>(j) * src_row + static_cast<ptrdiff_t>(i)];
}

#if HWY_TARGET <= HWY_AVX2
using D8 = hn::Full256<uint32_t>;
using V8 = hn::Vec256<uint32_t>;

// The 8 x 8 block at t (rows pitch apart) turned into out[0..7], dst's 8 rows: pairs of 32-bit
// lanes, then of 64-bit lanes, interleave within 128-bit halves; the halves then swap.
HWY_INLINE void Turn8(D8 d, const uint32_t* t, ptrdiff_t pitch, V8* out) {
    const hn::Repartition<uint64_t, D8> d64;
    V8 r0 = hn::LoadU(d, t), r1 = hn::LoadU(d, t + pitch), r2 = hn::LoadU(d, t + 2 * pitch),
       r3 = hn::LoadU(d, t + 3 * pitch), r4 = hn::LoadU(d, t + 4 * pitch),
       r5 = hn::LoadU(d, t + 5 * pitch), r6 = hn::LoadU(d, t + 6 * pitch),
       r7 = hn::LoadU(d, t + 7 * pitch);
    auto w = [&](V8 v) { return hn::BitCast(d64, v); };
    V8 t0 = hn::InterleaveLower(r0, r1), t1 = hn::InterleaveUpper(d, r0, r1),
       t2 = hn::InterleaveLower(r2, r3), t3 = hn::InterleaveUpper(d, r2, r3),
       t4 = hn::InterleaveLower(r4, r5), t5 = hn::InterleaveUpper(d, r4, r5),
       t6 = hn::InterleaveLower(r6, r7), t7 = hn::InterleaveUpper(d, r6, r7);
    V8 u0 = hn::BitCast(d, hn::InterleaveLower(w(t0), w(t2))),
       u1 = hn::BitCast(d, hn::InterleaveUpper(d64, w(t0), w(t2))),
       u2 = hn::BitCast(d, hn::InterleaveLower(w(t1), w(t3))),
       u3 = hn::BitCast(d, hn::InterleaveUpper(d64, w(t1), w(t3))),
       u4 = hn::BitCast(d, hn::InterleaveLower(w(t4), w(t6))),
       u5 = hn::BitCast(d, hn::InterleaveUpper(d64, w(t4), w(t6))),
       u6 = hn::BitCast(d, hn::InterleaveLower(w(t5), w(t7))),
       u7 = hn::BitCast(d, hn::InterleaveUpper(d64, w(t5), w(t7)));
    out[0] = hn::ConcatLowerLower(d, u4, u0);
    out[1] = hn::ConcatLowerLower(d, u5, u1);
    out[2] = hn::ConcatLowerLower(d, u6, u2);
    out[3] = hn::ConcatLowerLower(d, u7, u3);
    out[4] = hn::ConcatUpperUpper(d, u4, u0);
    out[5] = hn::ConcatUpperUpper(d, u5, u1);
    out[6] = hn::ConcatUpperUpper(d, u6, u2);
    out[7] = hn::ConcatUpperUpper(d, u7, u3);
}

// The 8 x 8 block at tile + (j, i) (rows j, pitch apart) into dst rows i..i+7 at column j.
HWY_INLINE void Block8(D8 d, const uint32_t* t, size_t pitch, uint32_t* o, ptrdiff_t dst_row) {
    V8 v[8];
    Turn8(d, t, static_cast<ptrdiff_t>(pitch), v);
    for (ptrdiff_t r = 0; r < 8; ++r)
        hn::StoreU(v[r], d, o + r * dst_row);
}

// Non-temporal stores that write a line in pieces far apart in time get it flushed from the
// write-combining buffers partly filled, each piece a memory transaction of its own; so with
// `stream`, the blocks of 8 rows go to a small buffer first and each row leaves it whole.
constexpr size_t kRun = 32;

void StreamRows(const uint32_t* rows, size_t n, size_t nj, uint32_t* dst, ptrdiff_t dst_row) {
    const hn::ScalableTag<uint32_t> d;
    const size_t N = hn::Lanes(d);
    for (size_t m = 0; m < n; ++m) {
        uint32_t* o = dst + static_cast<ptrdiff_t>(m) * dst_row;
        const uint32_t* r = rows + m * kRun;
        // Elements up to dst's first vector boundary one at a time, then whole aligned vectors.
        size_t bytes = N * sizeof(uint32_t);
        auto at = reinterpret_cast<uintptr_t>(o);
        // An element off its own alignment never reaches a vector boundary: no stream then.
        size_t j = at % sizeof(uint32_t)
                           ? nj
                           : std::min(nj, (bytes - at % bytes) % bytes / sizeof(uint32_t));
        for (size_t k = 0; k < j; ++k)
            o[k] = r[k];
        for (; j + N <= nj; j += N)
            hn::Stream(hn::LoadU(d, r + j), d, o + j);
        for (; j < nj; ++j)
            o[j] = r[j];
    }
}

void TransposeTile(const uint32_t* tile, size_t pitch, size_t nj, size_t ni, uint32_t* dst,
                   ptrdiff_t dst_row, bool stream) {
    const D8 d;
    size_t nj8 = nj / 8 * 8, ni8 = ni / 8 * 8;
    if (!stream) {
        for (size_t i = 0; i < ni8; i += 8)
            for (size_t j = 0; j < nj8; j += 8)
                Block8(d, tile + j * pitch + i, pitch,
                       dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j),
                       dst_row);
        TransposeScalar(tile, pitch, nj8, nj, 0, ni, dst, dst_row);
        TransposeScalar(tile, pitch, 0, nj8, ni8, ni, dst, dst_row);
        return;
    }
    HWY_ALIGN uint32_t rows[8 * kRun];
    for (size_t j0 = 0; j0 < nj; j0 += kRun) {
        size_t nr = std::min(kRun, nj - j0), nr8 = nr / 8 * 8;
        for (size_t i = 0; i < ni; i += 8) {
            size_t n = std::min<size_t>(8, ni - i);
            if (n == 8)
                for (size_t j = 0; j < nr8; j += 8)
                    Block8(d, tile + (j0 + j) * pitch + i, pitch, rows + j, kRun);
            TransposeScalar(tile + j0 * pitch + i, pitch, n == 8 ? nr8 : 0, nr, 0, n, rows, kRun);
            StreamRows(rows, n, nr,
                       dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0),
                       dst_row);
        }
    }
}

// Each step reads 8 columns of 16 src rows (16 streams the prefetchers follow) and writes 16
// elements of 8 dst rows, the two halves of a row back to back: a non-temporal store fills its
// line in the write-combining buffer at once (halves written far apart in time leave lines that
// are flushed partly filled). No tile buffer: a copy into it and out of it were two more passes
// through L1 per element. StoreStep writes one step's 8 dst rows.
HWY_INLINE void StoreStep(D8 d, const V8* a, const V8* b, uint32_t* p, ptrdiff_t dst_row, bool nt) {
    for (size_t r = 0; r < 8; ++r, p += dst_row) {
        if (nt) {
            hn::Stream(a[r], d, p);
            hn::Stream(b[r], d, p + 8);
        } else {
            hn::StoreU(a[r], d, p);
            hn::StoreU(b[r], d, p + 8);
        }
    }
}

// Src rows of at most this many elements (a band of 16 of them at most 4 KiB: NHWC -> NCHW with
// up to 64 channels) take the pipelined walk below.
constexpr size_t kShortRow = 64;

// The bands of 16 src rows where src rows are short: the steps run as one sequence (along a band,
// then into the next), and each step's src rows are loaded and turned before the previous step's
// stores are issued. Band by band, with 8 steps a band, every band's first loads (new src lines)
// came after a burst of 16 non-temporal stores: 64 x 64 x 64 x 64 NHWC -> NCHW took 8.2 ms at one
// thread on Zen 4 against 4.9 ms so (docs/x86-backend-log.md, "NHWC -> NCHW at one thread"). Longer
// rows keep the plain loop: there this walk measured the same (the 4096 x 4096 transpose, 128
// channels) or 3-8% slower (NCHW -> NHWC, 256 channels).
void BandsPipelined(const uint32_t* src, ptrdiff_t src_row, size_t bands, size_t ni8, uint32_t* dst,
                    ptrdiff_t dst_row, bool nt) {
    const D8 d;
    const size_t steps = bands * (ni8 / 8);
    V8 a[8], b[8];
    Turn8(d, src, src_row, a);
    Turn8(d, src + 8 * src_row, src_row, b);
    size_t j0 = 0, i = 0;
    for (size_t k = 0; k < steps; ++k) {
        size_t next_j0 = j0, next_i = i + 8;
        if (next_i == ni8) {
            next_i = 0;
            next_j0 += 16;
        }
        // The branch inside the loop (not a peeled last step) is deliberate: GCC 12 compiled the
        // peeled form with spills reloaded between the stores, and it ran no faster than the plain
        // loop.
        V8 na[8], nb[8];
        if (k + 1 < steps) {
            const uint32_t* s = src + static_cast<ptrdiff_t>(next_j0) * src_row +
                                static_cast<ptrdiff_t>(next_i);
            Turn8(d, s, src_row, na);
            Turn8(d, s + 8 * src_row, src_row, nb);
        }
        StoreStep(d, a, b, dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0),
                  dst_row, nt);
        for (size_t r = 0; r < 8; ++r) {
            a[r] = na[r];
            b[r] = nb[r];
        }
        j0 = next_j0;
        i = next_i;
    }
}

// On AVX2 (measured on Zen 3, AMD EPYC family 25 model 1, the only AVX2-only machine we have),
// the dst lines each step writes, one line into each of 8 rows a large power-of-two stride apart
// (the 4096 x 4096 transpose: 16 KiB; NHWC -> NCHW: the planes), are what holds the walk at half
// the triad: non-temporal stores of one line into each of 4096 rows 16 KiB apart ran at 6.7 GB/s
// there against 22.8 sequentially, two adjacent lines a row at 13.3, four at 22.9 (no src read in
// either; 2 MiB pages the same, so not the TLB). So the AVX2 walk gives every dst row a run of
// adjacent lines per visit: long src rows go in bands of 32 rows (two lines a dst row per step;
// 64 rows, or staging 64 x 64 tiles in an L1 buffer to store 256 bytes a row at once, measured
// slower, the src side then missing L1), and short ones (NHWC -> NCHW) turn 8 channels across
// all of the call's bands before the next 8 (each plane gets up to 256 pixels, 1 KiB, a visit)
// instead of the pipelined walk. The AVX-512 target keeps the loops tuned on Zen 4, where these
// were not measured; BandRows() tells copy_turned the band each target walks.
#if HWY_TARGET == HWY_AVX2
constexpr size_t kBandRows = 32;
#else
constexpr size_t kBandRows = 16;
#endif

size_t BandRows() {
    return kBandRows;
}

// Dst rows at least this many bytes apart (a page) take the bands of 32: closer ones (NCHW ->
// NHWC: 256 bytes) already get adjacent lines from consecutive steps, and there 32 src rows a
// band (32 lines in one L1 set, the src rows a power of two apart) only cost src misses: 0.85 of
// the triad against 1.48 with 16.
constexpr size_t kFarRows = 4096;

// One step of the walk: 8 columns of src rows j..j+15 turned into 16 elements of dst rows
// i..i+7. The store kind is a template argument: with a run-time flag the 32-row walk ran 6%
// behind the same loop written with the kind fixed (4096 x 4096, one thread), and with it fixed
// the in-cache transposes (plain stores) took 8-12% less time.
template <bool kNt>
HWY_INLINE void Step(D8 d, const uint32_t* s, ptrdiff_t src_row, uint32_t* o, ptrdiff_t dst_row) {
    V8 a[8], b[8];
    Turn8(d, s, src_row, a);
    Turn8(d, s + 8 * src_row, src_row, b);
    StoreStep(d, a, b, o, dst_row, kNt);
}

// AVX2's walk of `bands` bands of 16 src rows (above).
template <bool kNt>
void WalkAvx2(const uint32_t* src, ptrdiff_t src_row, size_t bands, size_t ni8, uint32_t* dst,
              ptrdiff_t dst_row) {
    const D8 d;
    auto s_at = [&](size_t j, size_t i) {
        return src + static_cast<ptrdiff_t>(j) * src_row + static_cast<ptrdiff_t>(i);
    };
    auto d_at = [&](size_t j, size_t i) {
        return dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j);
    };
    if (ni8 <= kShortRow) {
        for (size_t i = 0; i < ni8; i += 8)
            for (size_t j0 = 0; j0 < bands * 16; j0 += 16)
                Step<kNt>(d, s_at(j0, i), src_row, d_at(j0, i), dst_row);
        return;
    }
    size_t j0 = 0;
    if (static_cast<size_t>(dst_row < 0 ? -dst_row : dst_row) * sizeof(uint32_t) >= kFarRows)
        for (; j0 + 32 <= bands * 16; j0 += 32)
            for (size_t i = 0; i < ni8; i += 8) {
                Step<kNt>(d, s_at(j0, i), src_row, d_at(j0, i), dst_row);
                Step<kNt>(d, s_at(j0 + 16, i), src_row, d_at(j0 + 16, i), dst_row);
            }
    for (; j0 < bands * 16; j0 += 16)
        for (size_t i = 0; i < ni8; i += 8)
            Step<kNt>(d, s_at(j0, i), src_row, d_at(j0, i), dst_row);
}

void TransposeDirect(const uint32_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint32_t* dst,
                     ptrdiff_t dst_row, bool stream) {
    const D8 d;
    const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 32 == 0 && dst_row % 8 == 0;
    const size_t ni8 = ni / 8 * 8, bands = nj / 16;
    if constexpr (kBandRows == 32) {
        if (nt)
            WalkAvx2<true>(src, src_row, bands, ni8, dst, dst_row);
        else
            WalkAvx2<false>(src, src_row, bands, ni8, dst, dst_row);
    } else if (ni8 <= kShortRow) {
        if (bands > 0 && ni8 > 0)
            BandsPipelined(src, src_row, bands, ni8, dst, dst_row, nt);
    } else {
        for (size_t j0 = 0; j0 < bands * 16; j0 += 16) {
            const uint32_t* s = src + static_cast<ptrdiff_t>(j0) * src_row;
            uint32_t* o = dst + static_cast<ptrdiff_t>(j0);
            for (size_t i = 0; i < ni8; i += 8) {
                V8 a[8], b[8];
                Turn8(d, s + i, src_row, a);
                Turn8(d, s + 8 * src_row + static_cast<ptrdiff_t>(i), src_row, b);
                StoreStep(d, a, b, o + static_cast<ptrdiff_t>(i) * dst_row, dst_row, nt);
            }
        }
    }
    size_t j0 = bands * 16;
    // A band of 8 rows left: plain stores (its dst pieces are half lines).
    if (j0 + 8 <= nj) {
        const uint32_t* s = src + static_cast<ptrdiff_t>(j0) * src_row;
        for (size_t i = 0; i < ni8; i += 8) {
            V8 a[8];
            Turn8(d, s + i, src_row, a);
            uint32_t* p = dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0);
            for (size_t r = 0; r < 8; ++r, p += dst_row)
                hn::StoreU(a[r], d, p);
        }
        j0 += 8;
    }
    DirectScalar(src, src_row, 0, j0, ni8, ni, dst, dst_row);
    DirectScalar(src, src_row, j0, nj, 0, ni, dst, dst_row);
}

// 2-byte elements: 8 x 8 blocks in 128-bit registers (pairs of 16-, 32-, then 64-bit lanes
// interleave), two per step of 16 src rows, so that each dst row gets 16 elements (32 bytes) in
// two adjacent stores. Plain stores only: the caller streams 2-byte dsts through its tile buffer.
using D16 = hn::Full128<uint16_t>;
using V16 = hn::Vec128<uint16_t>;

HWY_INLINE void Turn8x16(D16 d, const uint16_t* t, ptrdiff_t pitch, V16* out) {
    const hn::Repartition<uint32_t, D16> d32;
    const hn::Repartition<uint64_t, D16> d64;
    V16 r[8];
    for (ptrdiff_t k = 0; k < 8; ++k)
        r[k] = hn::LoadU(d, t + k * pitch);
    V16 s[8];
    for (size_t k = 0; k < 4; ++k) {
        s[2 * k] = hn::InterleaveLower(r[2 * k], r[2 * k + 1]);
        s[2 * k + 1] = hn::InterleaveUpper(d, r[2 * k], r[2 * k + 1]);
    }
    auto w32 = [&](V16 v) { return hn::BitCast(d32, v); };
    auto w64 = [&](V16 v) { return hn::BitCast(d64, v); };
    // u[0..3]: rows 0-3, columns (0,1), (2,3), (4,5), (6,7); u[4..7]: rows 4-7, the same.
    V16 u[8];
    for (size_t h = 0; h < 2; ++h) {
        V16 a = s[4 * h], b = s[4 * h + 1], c = s[4 * h + 2], e = s[4 * h + 3];
        u[4 * h] = hn::BitCast(d, hn::InterleaveLower(w32(a), w32(c)));
        u[4 * h + 1] = hn::BitCast(d, hn::InterleaveUpper(d32, w32(a), w32(c)));
        u[4 * h + 2] = hn::BitCast(d, hn::InterleaveLower(w32(b), w32(e)));
        u[4 * h + 3] = hn::BitCast(d, hn::InterleaveUpper(d32, w32(b), w32(e)));
    }
    for (size_t k = 0; k < 4; ++k) {
        out[2 * k] = hn::BitCast(d, hn::InterleaveLower(w64(u[k]), w64(u[k + 4])));
        out[2 * k + 1] = hn::BitCast(d, hn::InterleaveUpper(d64, w64(u[k]), w64(u[k + 4])));
    }
}

void TransposeDirect16(const uint16_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint16_t* dst,
                       ptrdiff_t dst_row) {
    const D16 d;
    const size_t ni8 = ni / 8 * 8;
    size_t j0 = 0;
    for (; j0 + 16 <= nj; j0 += 16) {
        const uint16_t* s = src + static_cast<ptrdiff_t>(j0) * src_row;
        for (size_t i = 0; i < ni8; i += 8) {
            V16 a[8], b[8];
            Turn8x16(d, s + i, src_row, a);
            Turn8x16(d, s + 8 * src_row + static_cast<ptrdiff_t>(i), src_row, b);
            uint16_t* p = dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0);
            for (size_t r = 0; r < 8; ++r, p += dst_row) {
                hn::StoreU(a[r], d, p);
                hn::StoreU(b[r], d, p + 8);
            }
        }
    }
    if (j0 + 8 <= nj) {
        const uint16_t* s = src + static_cast<ptrdiff_t>(j0) * src_row;
        for (size_t i = 0; i < ni8; i += 8) {
            V16 a[8];
            Turn8x16(d, s + i, src_row, a);
            uint16_t* p = dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0);
            for (size_t r = 0; r < 8; ++r, p += dst_row)
                hn::StoreU(a[r], d, p);
        }
        j0 += 8;
    }
    DirectScalar(src, src_row, 0, j0, ni8, ni, dst, dst_row);
    DirectScalar(src, src_row, j0, nj, 0, ni, dst, dst_row);
}

// 1-byte elements: 16 x 16 blocks in 128-bit registers (pairs of 8-, 16-, 32-, then 64-bit lanes
// interleave), one per step of 16 src rows, 16 bytes to each of 16 dst rows. Plain stores only.
using D8b = hn::Full128<uint8_t>;
using V8b = hn::Vec128<uint8_t>;

HWY_INLINE void Turn16x8(D8b d, const uint8_t* t, ptrdiff_t pitch, V8b* out) {
    const hn::Repartition<uint16_t, D8b> d16;
    const hn::Repartition<uint32_t, D8b> d32;
    const hn::Repartition<uint64_t, D8b> d64;
    V8b r[16], s[16], u[16], v[16];
    for (ptrdiff_t k = 0; k < 16; ++k)
        r[k] = hn::LoadU(d, t + k * pitch);
    // s[2k], s[2k + 1]: rows 2k and 2k + 1, columns 0-7 and 8-15, byte pairs.
    for (size_t k = 0; k < 8; ++k) {
        s[2 * k] = hn::InterleaveLower(r[2 * k], r[2 * k + 1]);
        s[2 * k + 1] = hn::InterleaveUpper(d, r[2 * k], r[2 * k + 1]);
    }
    // u[4m + q]: rows 4m..4m+3, columns 4q..4q+3.
    for (size_t m = 0; m < 4; ++m) {
        auto a = hn::BitCast(d16, s[4 * m]), b = hn::BitCast(d16, s[4 * m + 1]);
        auto c = hn::BitCast(d16, s[4 * m + 2]), e = hn::BitCast(d16, s[4 * m + 3]);
        u[4 * m] = hn::BitCast(d, hn::InterleaveLower(a, c));
        u[4 * m + 1] = hn::BitCast(d, hn::InterleaveUpper(d16, a, c));
        u[4 * m + 2] = hn::BitCast(d, hn::InterleaveLower(b, e));
        u[4 * m + 3] = hn::BitCast(d, hn::InterleaveUpper(d16, b, e));
    }
    // v[8h + c]: rows 8h..8h+7, columns 2c and 2c + 1.
    for (size_t h = 0; h < 2; ++h)
        for (size_t q = 0; q < 4; ++q) {
            auto x = hn::BitCast(d32, u[8 * h + q]), y = hn::BitCast(d32, u[8 * h + 4 + q]);
            v[8 * h + 2 * q] = hn::BitCast(d, hn::InterleaveLower(x, y));
            v[8 * h + 2 * q + 1] = hn::BitCast(d, hn::InterleaveUpper(d32, x, y));
        }
    for (size_t c = 0; c < 8; ++c) {
        auto x = hn::BitCast(d64, v[c]), y = hn::BitCast(d64, v[8 + c]);
        out[2 * c] = hn::BitCast(d, hn::InterleaveLower(x, y));
        out[2 * c + 1] = hn::BitCast(d, hn::InterleaveUpper(d64, x, y));
    }
}

void TransposeDirect8(const uint8_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint8_t* dst,
                      ptrdiff_t dst_row) {
    const D8b d;
    const size_t ni16 = ni / 16 * 16;
    size_t j0 = 0;
    for (; j0 + 16 <= nj; j0 += 16) {
        const uint8_t* s = src + static_cast<ptrdiff_t>(j0) * src_row;
        for (size_t i = 0; i < ni16; i += 16) {
            V8b a[16];
            Turn16x8(d, s + i, src_row, a);
            uint8_t* p = dst + static_cast<ptrdiff_t>(i) * dst_row + static_cast<ptrdiff_t>(j0);
            for (size_t r = 0; r < 16; ++r, p += dst_row)
                hn::StoreU(a[r], d, p);
        }
    }
    DirectScalar(src, src_row, 0, j0, ni16, ni, dst, dst_row);
    DirectScalar(src, src_row, j0, nj, 0, ni, dst, dst_row);
}
#else
size_t BandRows() {
    return 16;
}

void TransposeDirect8(const uint8_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint8_t* dst,
                      ptrdiff_t dst_row) {
    DirectScalar(src, src_row, 0, nj, 0, ni, dst, dst_row);
}

void TransposeDirect16(const uint16_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint16_t* dst,
                       ptrdiff_t dst_row) {
    DirectScalar(src, src_row, 0, nj, 0, ni, dst, dst_row);
}

void TransposeDirect(const uint32_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint32_t* dst,
                     ptrdiff_t dst_row, bool /*stream*/) {
    DirectScalar(src, src_row, 0, nj, 0, ni, dst, dst_row);
}

void TransposeTile(const uint32_t* tile, size_t pitch, size_t nj, size_t ni, uint32_t* dst,
                   ptrdiff_t dst_row, bool /*stream*/) {
    TransposeScalar(tile, pitch, 0, nj, 0, ni, dst, dst_row);
}
#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(TransposeTile);
HWY_EXPORT(TransposeDirect);
HWY_EXPORT(TransposeDirect16);
HWY_EXPORT(TransposeDirect8);
HWY_EXPORT(BandRows);

void transpose_tile_u32(const uint32_t* tile, size_t pitch, size_t nj, size_t ni, uint32_t* dst,
                        ptrdiff_t dst_row, bool stream) {
    HWY_DYNAMIC_DISPATCH(TransposeTile)(tile, pitch, nj, ni, dst, dst_row, stream);
}

void transpose_u32(const uint32_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint32_t* dst,
                   ptrdiff_t dst_row, bool stream) {
    HWY_DYNAMIC_DISPATCH(TransposeDirect)(src, src_row, nj, ni, dst, dst_row, stream);
}

size_t transpose_u32_band_rows() {
    return HWY_DYNAMIC_DISPATCH(BandRows)();
}

void transpose_u16(const uint16_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint16_t* dst,
                   ptrdiff_t dst_row) {
    HWY_DYNAMIC_DISPATCH(TransposeDirect16)(src, src_row, nj, ni, dst, dst_row);
}

void transpose_u8(const uint8_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint8_t* dst,
                  ptrdiff_t dst_row) {
    HWY_DYNAMIC_DISPATCH(TransposeDirect8)(src, src_row, nj, ni, dst, dst_row);
}

}  // namespace neomeg::dnn::x86
#endif
