// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/max_pool_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/x86/max_pool_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;

constexpr float kLowest = -std::numeric_limits<float>::infinity();

// naive's step: v replaces the maximum so far where it is a NaN or greater, unless the maximum is
// already a NaN (so the first NaN stays).
HWY_INLINE VF Step(VF acc, VF v) {
    const MF take = hn::AndNot(hn::IsNaN(acc), hn::Or(hn::IsNaN(v), hn::Gt(v, acc)));
    return hn::IfThenElse(take, v, acc);
}

// ok without the lanes where a or b is a NaN: the fast loops' check, one compare per two vectors.
HWY_INLINE MF KeepOrdered(MF ok, VF a, VF b) {
#if HWY_TARGET <= HWY_AVX3
    // Unmasked compares stay off the chain, which runs through one mask AND (a compare merged
    // into ok would chain its latency through every vector of a row).
    return MF{_kand_mask16(_mm512_cmp_ps_mask(a.raw, b.raw, _CMP_ORD_Q), ok.raw)};
#elif HWY_TARGET == HWY_AVX2
    return MF{_mm256_and_ps(ok.raw, _mm256_cmp_ps(a.raw, b.raw, _CMP_ORD_Q))};
#else
    return hn::AndNot(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), ok);
#endif
}

#if HWY_TARGET <= HWY_AVX3
// KeepOrdered on AVX-512's 256- and 128-bit vectors (bfloat16 pairs of a 16- or 8-lane block).
HWY_INLINE hn::Mask256<float> KeepOrdered(hn::Mask256<float> ok, hn::Vec256<float> a,
                                          hn::Vec256<float> b) {
    return hn::Mask256<float>{_kand_mask8(_mm256_cmp_ps_mask(a.raw, b.raw, _CMP_ORD_Q), ok.raw)};
}

HWY_INLINE hn::Mask128<float> KeepOrdered(hn::Mask128<float> ok, hn::Vec128<float> a,
                                          hn::Vec128<float> b) {
    return hn::Mask128<float>{_kand_mask8(_mm_cmp_ps_mask(a.raw, b.raw, _CMP_ORD_Q), ok.raw)};
}
#endif

// Whether x86's maxps serves the fast loops: Max(v, acc) returns acc, the earlier value, on ties
// (so naive's first maximum, a zero's sign included); other targets' Max need not.
constexpr bool kMaxKeepsFirst = HWY_TARGET <= HWY_AVX2;

inline float StepScalar(float acc, float v) {
    return !std::isnan(acc) && (std::isnan(v) || v > acc) ? v : acc;
}

// The first n values from p, the other lanes -infinity (which never wins). Masked loads touch no
// masked-off memory on AVX2 and AVX-512; other targets copy through a buffer.
HWY_INLINE VF LoadFirst(DF d, const float* p, size_t n) {
#if HWY_TARGET <= HWY_AVX2
    const MF m = hn::FirstN(d, n);
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, kLowest));
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        tmp[i] = i < n ? p[i] : kLowest;
    return hn::Load(d, tmp);
#endif
}

HWY_INLINE void StoreN(VF v, DF d, float* p, size_t n) {
    if (n >= hn::Lanes(d)) {
        hn::StoreU(v, d, p);
        return;
    }
#if HWY_TARGET <= HWY_AVX2
    hn::BlendedStore(v, hn::FirstN(d, n), d, p);
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(v, d, tmp);
    std::memcpy(p, tmp, n * sizeof(float));
#endif
}

// A float32 vector from `p`: float32 as it is, bfloat16's bits (uint16_t) widened exactly (a
// bfloat16 is float32's upper half).
HWY_INLINE VF LoadAs(DF d, const float* p) {
    return hn::LoadU(d, p);
}

HWY_INLINE VF LoadAs(DF d, const uint16_t* p) {
    const hn::Rebind<uint16_t, DF> dh;
    const hn::RebindToUnsigned<DF> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(dh, p))));
}

// The first n values from p as LoadFirst gives them; bfloat16 through a buffer (16-bit masked
// loads are not native below AVX-512).
HWY_INLINE VF LoadFirstAs(DF d, const float* p, size_t n) {
    return LoadFirst(d, p, n);
}

HWY_INLINE VF LoadFirstAs(DF d, const uint16_t* p, size_t n) {
    HWY_ALIGN uint16_t tmp[HWY_MAX_BYTES / sizeof(float)];
    std::fill_n(tmp, hn::Lanes(d), uint16_t(0xFF80));  // bfloat16 -infinity
    std::memcpy(tmp, p, n * sizeof(uint16_t));
    return LoadAs(d, tmp);
}

HWY_INLINE void StoreNAs(VF v, DF d, float* p, size_t n) {
    StoreN(v, d, p, n);
}

// The upper half of each lane: exact for values widened from bfloat16, as maxima are (a NaN keeps
// its bits).
HWY_INLINE void StoreNAs(VF v, DF d, uint16_t* p, size_t n) {
    const hn::Rebind<uint16_t, DF> dh;
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const auto hi = hn::DemoteTo(dh, hn::BitCast(di, hn::ShiftRight<16>(hn::BitCast(du, v))));
    if (n >= hn::Lanes(d)) {
        hn::StoreU(hi, dh, p);
        return;
    }
    HWY_ALIGN uint16_t tmp[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(hi, dh, tmp);
    std::memcpy(p, tmp, n * sizeof(uint16_t));
}

// Stores a full vector of maxima in T: float32 as it is, bfloat16 as each lane's upper half.
HWY_INLINE void StoreFullAs(VF v, DF d, float* p) {
    hn::StoreU(v, d, p);
}

HWY_INLINE void StoreFullAs(VF v, DF /* d */, uint16_t* p) {
    const hn::Rebind<uint16_t, DF> dh;
    const hn::RebindToUnsigned<DF> du;
    hn::StoreU(hn::TruncateTo(dh, hn::ShiftRight<16>(hn::BitCast(du, v))), dh, p);
}

#if HWY_TARGET <= HWY_AVX2
// The lanes of m (a contiguous run, as ColumnsIn makes) from p, the others -infinity.
HWY_INLINE VF LoadMaskedAs(DF d, const float* p, MF m) {
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, kLowest));
}

HWY_INLINE VF LoadMaskedAs(DF d, const uint16_t* p, MF m) {
#if HWY_TARGET <= HWY_AVX3
    // AVX-512's masked 16-bit loads touch no masked-off memory.
    const hn::Rebind<uint16_t, DF> dh;
    const hn::RebindToUnsigned<DF> du;
    // Both masks are one bit per lane (__mmask16 for 16 lanes): the same bits serve.
    const decltype(hn::FirstN(dh, 0)) mh{m.raw};
    const VF v = hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::MaskedLoad(mh, dh, p))));
    return hn::IfThenElse(m, v, hn::Set(d, kLowest));
#else
    // AVX2 has none (Highway's reads the whole vector): through a buffer.
    HWY_ALIGN uint16_t tmp[HWY_MAX_BYTES / sizeof(float)];
    std::fill_n(tmp, hn::Lanes(d), uint16_t(0xFF80));
    const intptr_t first = hn::FindFirstTrue(d, m);
    if (first >= 0)
        std::memcpy(tmp + first, p + first, hn::CountTrue(d, m) * sizeof(uint16_t));
    return LoadAs(d, tmp);
#endif
}
#endif

// The valid window rows of output index o along one axis: [first, end) of taps.
struct Span {
    size_t first, end;
    ptrdiff_t start;  // the window's first input index (may be negative)
};

HWY_INLINE Span SpanOf(const PoolDims& g, size_t axis, size_t o) {
    const ptrdiff_t start =
            static_cast<ptrdiff_t>(o * g.s[axis]) - static_cast<ptrdiff_t>(g.p[axis]);
    const auto in = static_cast<ptrdiff_t>(g.in[axis]), k = static_cast<ptrdiff_t>(g.k[axis]);
    return {static_cast<size_t>(std::clamp<ptrdiff_t>(-start, 0, k)),
            static_cast<size_t>(std::clamp<ptrdiff_t>(in - start, 0, k)), start};
}

#if HWY_TARGET <= HWY_AVX2
constexpr size_t kMaxKw = 16;

// Lanes l whose column c + l lies in [0, w).
HWY_INLINE MF ColumnsIn(DF d, ptrdiff_t c, size_t w) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    const ptrdiff_t lo = std::clamp<ptrdiff_t>(-c, 0, n);
    const ptrdiff_t hi = std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(w) - c, 0, n);
    return hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                      hn::FirstN(d, static_cast<size_t>(hi)));
}

// One output row's N outputs from input column c0 on, SW the stride along W (1 or 2): tap kx's
// vector holds the input's columns c0 + kx + SW * lane. An edge block (!inside) masks its loads
// with m[kx * SW + h] (the SW vectors a tap reads), masked lanes -infinity.
template <size_t SW, class T>
HWY_INLINE VF RowBlock(DF d, const T* const* rows, size_t nrows, size_t kw, ptrdiff_t c0,
                       bool inside, const MF* m) {
    const size_t N = hn::Lanes(d);
    const VF lowest = hn::Set(d, kLowest);
    auto load = [&](const T* p, size_t i) {
        return inside ? LoadAs(d, p) : LoadMaskedAs(d, p, m[i]);
    };
    VF acc = lowest;
    for (size_t r = 0; r < nrows; ++r)
        for (size_t kx = 0; kx < kw; ++kx) {
            const T* p = rows[r] + c0 + static_cast<ptrdiff_t>(kx);
            VF v;
            if constexpr (SW == 1)
                v = load(p, kx);
            else
                v = hn::ConcatEven(d, load(p + N, 2 * kx + 1), load(p, 2 * kx));
            acc = Step(acc, v);
        }
    return acc;
}

// Each thread's buffer of row maxima, kept between calls.
inline float* RowMaxBuffer(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n)
        buf.resize(n);
    return buf.data();
}

// RowMaxFast for 3x3/2 on bfloat16 (columns c0 + 2j .. c0 + 2j + 2 from p = row + c0, c0 >= 1):
// its bits read as 32-bit pairs of columns, as the backward's rows loop reads them. The pair at
// column c0 + 1 + 2j holds taps 1 (low half, widened by a shift) and 2 (high half, by a mask), the
// pair at c0 - 1 + 2j tap 0 in its high half: two loads, a shift and two ANDs a block where the
// widening loads (vpmovzxwd and a shift each, four a block) and three even/odd permutes were.
// The loads span columns c0 - 1 .. c0 + 2N, as RowMaxFast's `fast` blocks allow.
HWY_INLINE VF RowMaxPairsOf3(DF d, const uint16_t* p, MF& ok) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Repartition<uint16_t, DF> d16;
    const auto high = hn::Set(du, 0xFFFF0000u);
    const auto a = hn::BitCast(du, hn::LoadU(d16, p + 1));
    const auto b = hn::BitCast(du, hn::LoadU(d16, p - 1));
    const VF t0 = hn::BitCast(d, hn::And(b, high));
    const VF t1 = hn::BitCast(d, hn::ShiftLeft<16>(a));
    const VF t2 = hn::BitCast(d, hn::And(a, high));
    ok = KeepOrdered(ok, t0, t1);
    ok = KeepOrdered(ok, t2, t2);
    return hn::Max(t2, hn::Max(t1, t0));
}

// RowMaxPairsOf3 for a row's first block when column -1 is padding (c0 = -1, 2N <= w): tap 0
// (column 2j - 1) is tap 2 of the window before, one lane on (`up`), -inf in lane 0; one load.
template <class Idx>
HWY_INLINE VF RowMaxPairsOf3Left(DF d, const uint16_t* row, const Idx& up, MF& ok) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Repartition<uint16_t, DF> d16;
    const auto a = hn::BitCast(du, hn::LoadU(d16, row));
    const VF t1 = hn::BitCast(d, hn::ShiftLeft<16>(a));
    const VF t2 = hn::BitCast(d, hn::And(a, hn::Set(du, 0xFFFF0000u)));
    const VF t0 =
            hn::IfThenElse(hn::FirstN(d, 1), hn::Set(d, kLowest), hn::TableLookupLanes(t2, up));
    ok = KeepOrdered(ok, t1, t2);
    return hn::Max(t2, hn::Max(t1, t0));
}

// One input row's maximum over each block output's columns by maxps (the earlier value on ties),
// the NaN check one compare per two vectors read: stride 2 loads two vectors per even tap, whose
// even lanes are that tap and odd lanes the next one.
// KW: the window's width where fixed at compile time (the loops unrolled), else 0 and kw;
// INSIDE: whether the loads stay in the row (else masked by m).
template <size_t SW, size_t KW, bool INSIDE, class T>
HWY_INLINE VF RowMaxFast(DF d, const T* row, size_t kw_runtime, ptrdiff_t c0, const MF* m, MF& ok) {
    const size_t N = hn::Lanes(d);
    const size_t kw = KW ? KW : kw_runtime;
    auto load = [&](const T* p, size_t i) {
        if constexpr (INSIDE) {
            (void)i;
            return LoadAs(d, p);
        } else {
            return LoadMaskedAs(d, p, m[i]);
        }
    };
    const T* p = row + c0;
    if constexpr (SW == 2 && KW == 3 && INSIDE && std::is_same_v<T, uint16_t>) {
        if (c0 >= 1)
            return RowMaxPairsOf3(d, p, ok);
    }
    VF acc;
    if constexpr (SW == 1) {
        acc = load(p, 0);
        for (size_t kx = 1; kx < kw; kx += 2) {
            const VF a = load(p + kx, kx);
            const VF b = kx + 1 < kw ? load(p + kx + 1, kx + 1) : a;
            ok = KeepOrdered(ok, a, b);
            acc = hn::Max(b, hn::Max(a, acc));
        }
        ok = KeepOrdered(ok, acc, acc);
    } else {
        // Taps kx and kx + 1 from the two vectors at kx; an odd width's last tap from the odd
        // lanes of the vectors at kw - 2 (so the loads end at column c0 + kw + 2N - 3, the last
        // one a window reads, and the last block of 3x3/2 rows needs no mask).
        size_t kx = 0;
        for (; kx + 1 < kw; kx += 2) {
            const VF a = load(p + kx, 2 * kx), b = load(p + kx + N, 2 * kx + 1);
            ok = KeepOrdered(ok, a, b);
            const VF e = hn::ConcatEven(d, b, a);
            acc = kx == 0 ? e : hn::Max(e, acc);
            acc = hn::Max(hn::ConcatOdd(d, b, a), acc);
        }
        if (kx < kw) {
            if (kx == 0) {
                const VF a = load(p, 0), b = load(p + N, 1);
                ok = KeepOrdered(ok, a, b);
                acc = hn::ConcatEven(d, b, a);
            } else {
                const size_t at = kx - 1;
                const VF a = load(p + at, 2 * at), b = load(p + at + N, 2 * at + 1);
                ok = KeepOrdered(ok, a, b);
                acc = hn::Max(hn::ConcatOdd(d, b, a), acc);
            }
        }
    }
    return acc;
}

// A block of up to N outputs along W from input column c0 on, and whether its loads stay in the
// row (else they are masked by m).
struct RowBlockAt {
    size_t q0, n;
    ptrdiff_t c0;
    bool inside;  // RowBlock's loads stay in the row
    bool fast;    // RowMaxFast's do
    bool left;    // RowMaxPairsOf3Left serves (bfloat16 3x3/2, column -1 padding, 2N <= w)
};

// Windows without depth (kd == 1): each input row's maximum over the window's columns once, then
// each output row the maximum of its rows' (3x3 windows of stride 2 share every other row). Rows
// are read in order, all of a row's blocks at once (a stream the prefetcher follows); the last
// block overlaps the one before where W's outputs are not a multiple of N, so that only blocks
// at the edges mask their loads. A plane whose rows hold a NaN is recomputed by RowBlock, which
// keeps naive's rule; NaN-free data pays for the check only. False where the blocks need more
// than the buffers here (very wide rows, or masks inside).
template <size_t SW, size_t KW, class T>
bool SeparableRows(DF d, const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds,
                   const PoolDims& g) {
    const size_t N = hn::Lanes(d), w = g.in[2], kw = g.k[2], out = g.out[2];
    constexpr size_t kMaxBlocks = 16;
    const size_t nb = (out + N - 1) / N;
    if (nb > kMaxBlocks)
        return false;
    RowBlockAt blk[kMaxBlocks];
    MF m[2][kMaxKw * SW];  // the masks of the first and the last block
    // Columns read: c0 .. c0 + last + SW * N - 1, last the final column a load starts at
    // (RowMaxFast's `fast`; RowBlock's, for NaNs, reads from each tap: `last_exact`).
    const size_t last = SW == 2 ? (kw % 2 == 0 ? kw - 2 : kw == 1 ? 0 : kw - 2) : kw - 1;
    const size_t last_exact = kw - 1;
    for (size_t b = 0; b < nb; ++b) {
        size_t q0 = b * N;
        if (b + 1 == nb && b > 0 && q0 + N > out)
            q0 = out - N;
        const ptrdiff_t c0 = static_cast<ptrdiff_t>(q0 * SW) - static_cast<ptrdiff_t>(g.p[2]);
        const bool inside = c0 >= 0 && static_cast<size_t>(c0) + last_exact + SW * N <= w;
        const bool fast = c0 >= 0 && static_cast<size_t>(c0) + last + SW * N <= w;
        const bool left =
                std::is_same_v<T, uint16_t> && SW == 2 && KW == 3 && c0 == -1 && 2 * N <= w;
        blk[b] = {q0, std::min(N, out - q0), c0, inside, fast, left};
        if (!inside) {
            if (b != 0 && b + 1 != nb)
                return false;
            MF* mb = m[b == 0 ? 0 : 1];
            for (size_t kx = 0; kx < kw; ++kx)
                for (size_t h = 0; h < SW; ++h)
                    mb[kx * SW + h] = ColumnsIn(d, c0 + static_cast<ptrdiff_t>(kx + h * N), w);
        }
    }
    auto masks = [&](size_t b) { return m[b == 0 ? 0 : 1]; };
    HWY_ALIGN int32_t up_lanes[HWY_MAX_BYTES / sizeof(float)] = {};
    for (size_t j = 1; j < N; ++j)
        up_lanes[j] = static_cast<int32_t>(j - 1);  // lane j from lane j - 1
    const auto up = hn::SetTableIndices(d, up_lanes);
    float* hm = RowMaxBuffer(g.in[1] * nb * N);
    for (size_t z = 0; z < g.out[0]; ++z) {
        const T* plane = src + static_cast<ptrdiff_t>(z) * ss[0];
        MF ok = hn::FirstN(d, N);
        for (size_t y = 0; y < g.in[1]; ++y) {
            const T* row = plane + static_cast<ptrdiff_t>(y) * ss[1];
            for (size_t b = 0; b < nb; ++b) {
                if constexpr (std::is_same_v<T, uint16_t> && SW == 2 && KW == 3) {
                    if (blk[b].left) {
                        hn::StoreU(RowMaxPairsOf3Left(d, row, up, ok), d, hm + (y * nb + b) * N);
                        continue;
                    }
                }
                const VF v =
                        blk[b].fast
                                ? RowMaxFast<SW, KW, true>(d, row, kw, blk[b].c0, nullptr, ok)
                                : RowMaxFast<SW, KW, false>(d, row, kw, blk[b].c0, masks(b), ok);
                hn::StoreU(v, d, hm + (y * nb + b) * N);
            }
        }
        const bool exact = !hn::AllTrue(d, ok);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            T* o = dst + static_cast<ptrdiff_t>(z) * ds[0] + static_cast<ptrdiff_t>(oy) * ds[1];
            const size_t y0 = static_cast<size_t>(sy.start + static_cast<ptrdiff_t>(sy.first));
            const size_t ny = sy.end - sy.first;
            for (size_t b = 0; b < nb; ++b) {
                VF acc;
                if (exact) {
                    const T* rows[64];
                    for (size_t r = 0; r < ny; ++r)
                        rows[r] = plane + static_cast<ptrdiff_t>(y0 + r) * ss[1];
                    acc = RowBlock<SW>(d, rows, ny, kw, blk[b].c0, blk[b].inside, masks(b));
                } else if (ny == 0) {
                    acc = hn::Set(d, kLowest);
                } else {
                    acc = hn::LoadU(d, hm + (y0 * nb + b) * N);
                    for (size_t r = 1; r < ny; ++r)
                        acc = hn::Max(hn::LoadU(d, hm + ((y0 + r) * nb + b) * N), acc);
                }
                if (blk[b].n == N)
                    StoreFullAs(acc, d, o + blk[b].q0);
                else
                    StoreNAs(acc, d, o + blk[b].q0, blk[b].n);
            }
        }
    }
    return true;
}

// The vector loop of MaxPoolRows: block by block along W (each block's masks made once), every
// output row of the plane.
template <size_t SW, class T>
void RowsInVectors(DF d, const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds,
                   const PoolDims& g) {
    const size_t N = hn::Lanes(d), w = g.in[2], kw = g.k[2];
    if (kMaxKeepsFirst && g.k[0] == 1 && g.s[0] == 1 && g.p[0] == 0 && g.k[1] <= 64) {
        const bool done = kw == 2   ? SeparableRows<SW, 2>(d, src, ss, dst, ds, g)
                          : kw == 3 ? SeparableRows<SW, 3>(d, src, ss, dst, ds, g)
                                    : SeparableRows<SW, 0>(d, src, ss, dst, ds, g);
        if (done)
            return;
    }
    constexpr size_t kMaxRows = 64;
    const T* rows[kMaxRows];
    MF m[kMaxKw * SW];
    for (size_t q0 = 0; q0 < g.out[2]; q0 += N) {
        const ptrdiff_t c0 = static_cast<ptrdiff_t>(q0 * SW) - static_cast<ptrdiff_t>(g.p[2]);
        // Unmasked loads read columns c0 .. c0 + kw - 1 + SW * N - 1 (a stride of 2 reads the odd
        // columns too).
        const bool inside = c0 >= 0 && static_cast<size_t>(c0) + kw + SW * N - 1 <= w;
        if (!inside)
            for (size_t kx = 0; kx < kw; ++kx)
                for (size_t h = 0; h < SW; ++h)
                    m[kx * SW + h] = ColumnsIn(d, c0 + static_cast<ptrdiff_t>(kx + h * N), w);
        for (size_t oz = 0; oz < g.out[0]; ++oz) {
            const Span sz = SpanOf(g, 0, oz);
            for (size_t oy = 0; oy < g.out[1]; ++oy) {
                const Span sy = SpanOf(g, 1, oy);
                size_t nrows = 0;
                for (size_t kz = sz.first; kz < sz.end; ++kz)
                    for (size_t ky = sy.first; ky < sy.end; ++ky)
                        rows[nrows++] = src + (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                        (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
                T* o = dst + static_cast<ptrdiff_t>(oz) * ds[0] +
                       static_cast<ptrdiff_t>(oy) * ds[1] + static_cast<ptrdiff_t>(q0);
                StoreNAs(RowBlock<SW>(d, rows, nrows, kw, c0, inside, m), d, o, g.out[2] - q0);
            }
        }
    }
}
#endif

inline float WidenScalar(float v) {
    return v;
}

inline float WidenScalar(uint16_t bits) {
    const uint32_t b = static_cast<uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &b, sizeof(v));
    return v;
}

inline void NarrowTo(float v, float* p) {
    *p = v;
}

inline void NarrowTo(float v, uint16_t* p) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof(b));
    *p = static_cast<uint16_t>(b >> 16);
}

template <class T>
void RowsOf(const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds, const PoolDims& g) {
    const DF d;
#if HWY_TARGET <= HWY_AVX2
    if (g.k[0] * g.k[1] <= 64 && g.k[2] <= kMaxKw) {
        if (g.s[2] == 1)
            return RowsInVectors<1>(d, src, ss, dst, ds, g);
        if (g.s[2] == 2)
            return RowsInVectors<2>(d, src, ss, dst, ds, g);
    }
#endif
    // Other strides and targets (no even-lane concatenation, no masked loads): one window at a
    // time.
    (void)d;
    for (size_t oz = 0; oz < g.out[0]; ++oz) {
        const Span sz = SpanOf(g, 0, oz);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            T* o = dst + static_cast<ptrdiff_t>(oz) * ds[0] + static_cast<ptrdiff_t>(oy) * ds[1];
            for (size_t ox = 0; ox < g.out[2]; ++ox) {
                const Span sx = SpanOf(g, 2, ox);
                float acc = kLowest;
                for (size_t kz = sz.first; kz < sz.end; ++kz)
                    for (size_t ky = sy.first; ky < sy.end; ++ky) {
                        const T* row = src + (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                       (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
                        for (size_t kx = sx.first; kx < sx.end; ++kx)
                            acc = StepScalar(
                                    acc, WidenScalar(row[sx.start + static_cast<ptrdiff_t>(kx)]));
                    }
                NarrowTo(acc, o + ox);
            }
        }
    }
}

// One output position's window over lanes [l, l + U * N) of float32, by maxps (the earlier value
// on ties): rows are the window's input rows (naive's order), each tap x0 + kx * sx from them.
template <size_t U>
HWY_INLINE MF LanesF32(DF d, const float* const* rows, size_t nrows, ptrdiff_t x0, size_t nx,
                       ptrdiff_t sx, size_t l, float* o) {
    const size_t N = hn::Lanes(d);
    VF acc[U];
    MF ok = hn::FirstN(d, N);
    auto tap = [&](const float* p, bool first) {
        VF v[U];
        for (size_t u = 0; u < U; ++u)
            v[u] = hn::LoadU(d, p + u * N);
        for (size_t u = 0; u < U; u += 2)
            ok = KeepOrdered(ok, v[u], v[u + 1 < U ? u + 1 : u]);
        for (size_t u = 0; u < U; ++u)
            acc[u] = first ? v[u] : hn::Max(v[u], acc[u]);
    };
    for (size_t r = 0; r < nrows; ++r)
        for (size_t kx = 0; kx < nx; ++kx)
            tap(rows[r] + x0 + static_cast<ptrdiff_t>(kx) * sx + l, r == 0 && kx == 0);
    for (size_t u = 0; u < U; ++u)
        hn::StoreU(acc[u], d, o + l + u * N);
    return ok;
}

// The same over lanes [l, l + U * 2N) of bfloat16, read as U vectors of 32-bit pairs: the even
// lanes widen by a shift, the odd ones by clearing the low half (both float32, exactly), and the
// maxima go back to their halves, with no shuffles.
template <size_t U>
HWY_INLINE MF LanesBF16Pairs(DF d, const uint16_t* const* rows, size_t nrows, ptrdiff_t x0,
                             size_t nx, ptrdiff_t sx, size_t l, uint16_t* o) {
    const hn::RebindToUnsigned<DF> du;
    const size_t N = hn::Lanes(d);
    MF ok = hn::FirstN(d, N);
    const auto hi = hn::Set(du, 0xFFFF0000u);
    VF even[U], odd[U];
    auto tap = [&](const uint16_t* p, bool first) {
        for (size_t u = 0; u < U; ++u) {
            const auto w = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p + u * 2 * N));
            const VF e = hn::BitCast(d, hn::ShiftLeft<16>(w)), q = hn::BitCast(d, hn::And(w, hi));
            ok = KeepOrdered(ok, e, q);
            even[u] = first ? e : hn::Max(e, even[u]);
            odd[u] = first ? q : hn::Max(q, odd[u]);
        }
    };
    for (size_t r = 0; r < nrows; ++r)
        for (size_t kx = 0; kx < nx; ++kx)
            tap(rows[r] + x0 + static_cast<ptrdiff_t>(kx) * sx + l, r == 0 && kx == 0);
    for (size_t u = 0; u < U; ++u) {
        const auto w = hn::Or(hn::ShiftRight<16>(hn::BitCast(du, even[u])),
                              hn::And(hn::BitCast(du, odd[u]), hi));
        hn::StoreU(w, du, reinterpret_cast<uint32_t*>(o + l + u * 2 * N));
    }
    return ok;
}

// Lanes [l, l + n) (n <= N) of either type, widened by promotion (bfloat16) or read as they are,
// masked past n.
template <class T>
HWY_INLINE MF LanesOne(DF d, const T* const* rows, size_t nrows, ptrdiff_t x0, size_t nx,
                       ptrdiff_t sx, size_t l, size_t n, T* o) {
    const size_t N = hn::Lanes(d);
    VF acc = hn::Set(d, kLowest);
    MF ok = hn::FirstN(d, N);
    for (size_t r = 0; r < nrows; ++r)
        for (size_t kx = 0; kx < nx; ++kx) {
            const T* p = rows[r] + x0 + static_cast<ptrdiff_t>(kx) * sx + l;
            const VF v = n == N ? LoadAs(d, p) : LoadFirstAs(d, p, n);
            ok = KeepOrdered(ok, v, v);
            acc = hn::Max(v, acc);
        }
    StoreNAs(acc, d, o + l, n);
    return ok;
}

// One output position's `lanes` values by the fast loops above; ok keeps the lanes where no tap
// was a NaN. Each position's check is a chain of its own, ANDed into ok once (a chain through
// every tap of a row would bound the loop by the compares' latency).
HWY_INLINE MF LanesFast(DF d, const float* const* rows, size_t nrows, ptrdiff_t x0, size_t nx,
                        ptrdiff_t sx, size_t lanes, float* o, MF ok) {
    const size_t N = hn::Lanes(d);
    size_t l = 0;
    for (; l + 4 * N <= lanes; l += 4 * N)
        ok = hn::And(ok, LanesF32<4>(d, rows, nrows, x0, nx, sx, l, o));
    for (; l + N <= lanes; l += N)
        ok = hn::And(ok, LanesF32<1>(d, rows, nrows, x0, nx, sx, l, o));
    if (l < lanes)
        ok = hn::And(ok, LanesOne(d, rows, nrows, x0, nx, sx, l, lanes - l, o));
    return ok;
}

HWY_INLINE MF LanesFast(DF d, const uint16_t* const* rows, size_t nrows, ptrdiff_t x0, size_t nx,
                        ptrdiff_t sx, size_t lanes, uint16_t* o, MF ok) {
    const size_t N = hn::Lanes(d);
    size_t l = 0;
    for (; l + 4 * N <= lanes; l += 4 * N)
        ok = hn::And(ok, LanesBF16Pairs<2>(d, rows, nrows, x0, nx, sx, l, o));
    for (; l + 2 * N <= lanes; l += 2 * N)
        ok = hn::And(ok, LanesBF16Pairs<1>(d, rows, nrows, x0, nx, sx, l, o));
    for (; l < lanes; l += N)
        ok = hn::And(ok, LanesOne(d, rows, nrows, x0, nx, sx, l, std::min(N, lanes - l), o));
    return ok;
}

// One position's NT taps (at b + to[t]) over 2 * Lanes(dp) bfloat16 lanes, read as 32-bit pairs
// (see LanesBF16Pairs) into vectors of dp's width, the maxima stored at out; pos loses the lanes
// where a tap held a NaN. On AVX-512 a 16-lane block runs in 256-bit vectors: widening it into
// one 512-bit vector (vpmovzxwd) and narrowing it back (vpermw) cross the vector's halves, which
// Zen 4 runs at half rate, and its 512-bit shifts and maxima cost two 256-bit ones there anyway.
template <size_t NT, class DP>
HWY_INLINE void PairTaps(DP dp, const uint16_t* b, const ptrdiff_t* to, uint16_t* out,
                         hn::Mask<DP>& pos) {
    const hn::RebindToUnsigned<DP> du;
    const auto hi = hn::Set(du, 0xFFFF0000u);
    hn::Vec<DP> even, odd;
    for (size_t t = 0; t < NT; ++t) {
        const auto w = hn::LoadU(du, reinterpret_cast<const uint32_t*>(b + to[t]));
        const auto e = hn::BitCast(dp, hn::ShiftLeft<16>(w)), q = hn::BitCast(dp, hn::And(w, hi));
        pos = KeepOrdered(pos, e, q);
        even = t == 0 ? e : hn::Max(e, even);
        odd = t == 0 ? q : hn::Max(q, odd);
    }
    const auto w = hn::OrAnd(hn::ShiftRight<16>(hn::BitCast(du, even)), hn::BitCast(du, odd), hi);
    hn::StoreU(w, du, reinterpret_cast<uint32_t*>(out));
}

// One bfloat16 tap's 2 * Lanes(dp) lanes at p as pairs: even lanes e, odd lanes q (float32,
// exactly), ok losing the lanes where either is a NaN.
template <class DP>
HWY_INLINE void PairLoad(DP dp, const uint16_t* p, hn::Vec<DP>& e, hn::Vec<DP>& q,
                         hn::Mask<DP>& ok) {
    const hn::RebindToUnsigned<DP> du;
    const auto w = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    e = hn::BitCast(dp, hn::ShiftLeft<16>(w));
    q = hn::BitCast(dp, hn::And(w, hn::Set(du, 0xFFFF0000u)));
    ok = KeepOrdered(ok, e, q);
}

// `count` positions 2h apart whose windows are R rows of three taps h apart (at b + to[3r] +
// {0, h, 2h}; 3x3/2): a position's third column is the next one's first, so each column is read,
// widened and checked once per row (6 loads a position for 3x3 instead of 9). Each row's maximum
// keeps its first on ties, then the rows in order: naive's first maximum, as the taps in order.
// U runs of 2 * Lanes(dp) lanes side by side (channels-last with 64 bfloat16 channels: U = 2), so
// that a position's lanes are read together, whole cache lines in order, rather than every other
// line of a row in one pass and the rest in a second (a third slower streaming from L3 or memory).
template <size_t R, size_t U, class DP>
HWY_INLINE hn::Mask<DP> PairRowsOf3(DP dp, const uint16_t* b, const ptrdiff_t* to, ptrdiff_t h,
                                    size_t count, uint16_t* out, ptrdiff_t ostep, hn::Mask<DP> ok) {
    const hn::RebindToUnsigned<DP> du;
    const auto hi = hn::Set(du, 0xFFFF0000u);
    const size_t run = 2 * hn::Lanes(dp);
    hn::Vec<DP> e0[U][R], q0[U][R];
    for (size_t u = 0; u < U; ++u)
        for (size_t r = 0; r < R; ++r)
            PairLoad(dp, b + to[3 * r] + u * run, e0[u][r], q0[u][r], ok);
    for (size_t i = 0; i < count; ++i, b += 2 * h, out += ostep) {
        // A chain of its own per position, one AND into ok.
        auto pos = hn::FirstN(dp, hn::Lanes(dp));
        for (size_t u = 0; u < U; ++u) {
            hn::Vec<DP> even, odd;
            for (size_t r = 0; r < R; ++r) {
                hn::Vec<DP> e1, q1, e2, q2;
                const uint16_t* p = b + to[3 * r] + u * run;
                PairLoad(dp, p + h, e1, q1, pos);
                PairLoad(dp, p + 2 * h, e2, q2, pos);
                const auto he = hn::Max(e2, hn::Max(e1, e0[u][r]));
                const auto hq = hn::Max(q2, hn::Max(q1, q0[u][r]));
                even = r == 0 ? he : hn::Max(he, even);
                odd = r == 0 ? hq : hn::Max(hq, odd);
                e0[u][r] = e2;
                q0[u][r] = q2;
            }
            const auto w =
                    hn::OrAnd(hn::ShiftRight<16>(hn::BitCast(du, even)), hn::BitCast(du, odd), hi);
            hn::StoreU(w, du, reinterpret_cast<uint32_t*>(out + u * run));
        }
        ok = hn::And(ok, pos);
    }
    return ok;
}

// Several output rows of LanesTaps: n of them, `step` apart in src and `ostep` in dst.
struct Rows2D {
    size_t n;
    ptrdiff_t step, ostep;
};

#if HWY_TARGET <= HWY_AVX2
// `count` positions `step` apart (taps at b + to[t]) in each of `rows`, one block of 16 bfloat16
// lanes each, compared as 16-bit integers without widening (no conversion either way: a window's
// maximum is one of its values, bits and all). As signed integers non-negative bfloat16 values
// order as their floats; negative ones order by magnitude, the wrong way, and below every
// non-negative one. So the float maximum is the signed maximum where that is non-negative, else
// (all taps negative) the signed minimum, the smallest magnitude (-0 the least integer).
// Two cases differ from naive's rule and send the output row to naive's Step on float32:
// - a NaN: the positive ones are the signed maxima above +inf (0x7F80), the negative ones
//   unsigned values above -inf (0xFF80), which the unsigned maximum shows;
// - -0 and +0 both in a window without a positive value: the integers say +0 where naive keeps
//   whichever came first (seen as a signed maximum of 0 with a signed minimum of 0x8000).
// Per tap three integer operations on 256-bit vectors, where float32 needs a 512-bit widening,
// shift, compare and maximum per tap and a narrowing per output (on Zen 4 512-bit operations
// cost two 256-bit ones).
template <size_t NT>
HWY_NOINLINE void KeyRun16(const uint16_t* base, ptrdiff_t step, size_t count, const ptrdiff_t* off,
                           uint16_t* obase, ptrdiff_t ostep, const Rows2D& rows) {
    const hn::FixedTag<int16_t, 16> di;
    const hn::RebindToUnsigned<decltype(di)> du;
    using VI = hn::Vec<decltype(di)>;
    ptrdiff_t to[NT];
    for (size_t t = 0; t < NT; ++t)
        to[t] = off[t];
    const VI zero = hn::Zero(di), sign = hn::Set(di, int16_t(-0x8000));
    for (size_t j = 0; j < rows.n; ++j) {
        const uint16_t* row_b = base + static_cast<ptrdiff_t>(j) * rows.step;
        uint16_t* row_o = obase + static_cast<ptrdiff_t>(j) * rows.ostep;
        const uint16_t* b = row_b;
        uint16_t* out = row_o;
        // Over the row: the signed maxima (positive NaNs), the unsigned maxima (negative NaNs)
        // and the unsigned minimum of max | (min ^ 0x8000), zero where a window ties -0 and +0.
        VI top = hn::Set(di, int16_t(-0x8000));
        auto top_u = hn::Zero(du), tie = hn::Set(du, uint16_t(0xFFFF));
        for (size_t i = 0; i < count; ++i, b += step, out += ostep) {
            VI mx = hn::LoadU(di, reinterpret_cast<const int16_t*>(b + to[0])), mn = mx;
            auto mu = hn::BitCast(du, mx);
            for (size_t t = 1; t < NT; ++t) {
                const VI v = hn::LoadU(di, reinterpret_cast<const int16_t*>(b + to[t]));
                mx = hn::Max(mx, v);
                mn = hn::Min(mn, v);
                mu = hn::Max(mu, hn::BitCast(du, v));
            }
            const VI r = hn::IfThenElse(hn::Lt(mx, zero), mn, mx);
            hn::StoreU(hn::BitCast(du, r), du, out);
            top = hn::Max(top, mx);
            top_u = hn::Max(top_u, mu);
            tie = hn::Min(tie, hn::BitCast(du, hn::Or(mx, hn::Xor(mn, sign))));
        }
        // Unsigned above 0xFF80: as signed, in (-128, 0).
        const VI tu = hn::BitCast(di, top_u);
        const bool exact = hn::AllFalse(di, hn::Gt(top, hn::Set(di, int16_t(0x7F80)))) &&
                           hn::AllFalse(di, hn::And(hn::Lt(tu, zero),
                                                    hn::Gt(tu, hn::Set(di, int16_t(-128))))) &&
                           hn::AllFalse(du, hn::Eq(tie, hn::Zero(du)));
        if (exact)
            continue;
        const DF d;
        const size_t N = hn::Lanes(d);
        b = row_b;
        out = row_o;
        for (size_t i = 0; i < count; ++i, b += step, out += ostep)
            for (size_t l = 0; l < 16; l += N) {
                VF acc = hn::Set(d, kLowest);
                for (size_t t = 0; t < NT; ++t)
                    acc = Step(acc, LoadFirstAs(d, b + to[t] + l, std::min(N, 16 - l)));
                StoreNAs(acc, d, out + l, std::min(N, 16 - l));
            }
    }
}
#endif

// `count` positions `step` apart (their taps at b + to[t]) in each of `rows`, lanes
// [0, 2 * Lanes(dp)) as PairTaps reads them, or by PairRowsOf3 where `threes` (then U runs of
// them side by side); ok loses the lanes where a tap held a NaN. Not inlined: in LanesOf the
// offsets would not stay in registers.
template <size_t NT, class DP, size_t U = 1>
HWY_NOINLINE hn::Mask<DP> PairRun(DP dp, const uint16_t* base, ptrdiff_t step, size_t count,
                                  const ptrdiff_t* off, uint16_t* obase, ptrdiff_t ostep,
                                  const Rows2D& rows, bool threes, hn::Mask<DP> ok) {
    static_assert(U == 1 || NT % 3 == 0, "several runs only for rows of three taps");
    ptrdiff_t to[NT];
    for (size_t t = 0; t < NT; ++t)
        to[t] = off[t];
    for (size_t j = 0; j < rows.n; ++j) {
        const uint16_t* b = base + static_cast<ptrdiff_t>(j) * rows.step;
        uint16_t* out = obase + static_cast<ptrdiff_t>(j) * rows.ostep;
        if constexpr (NT % 3 == 0) {
            if (threes || U > 1) {
                ok = PairRowsOf3<NT / 3, U>(dp, b, to, step / 2, count, out, ostep, ok);
                continue;
            }
        }
        auto row = hn::FirstN(dp, hn::Lanes(dp));
        for (size_t i = 0; i < count; ++i, b += step, out += ostep) {
            // A chain of its own per position, one AND into the row's.
            auto pos = hn::FirstN(dp, hn::Lanes(dp));
            PairTaps<NT>(dp, b, to, out, pos);
            row = hn::And(row, pos);
        }
        ok = hn::And(ok, row);
    }
    return ok;
}

// Output positions whose windows all have the same NT taps, at offsets off[t] from each position's
// base (base0 + i * step for the i-th of `count`), the outputs at o + i * ostep: the window's taps
// unrolled, lanes as LanesFast splits them, the NaN check one compare per two vectors read.
template <size_t NT, class T>
HWY_INLINE MF LanesTaps(DF d, const T* base0, ptrdiff_t step, size_t count, const ptrdiff_t* off,
                        size_t lanes, T* o, ptrdiff_t ostep, const Rows2D& rows, MF ok) {
    const size_t N = hn::Lanes(d);
    ptrdiff_t to[NT];
    for (size_t t = 0; t < NT; ++t)
        to[t] = off[t];
#if HWY_TARGET <= HWY_AVX2
    bool threes = NT % 3 == 0 && step % 2 == 0 && count > 1;
    for (size_t t = 0; threes && t + 2 < NT; t += 3)
        threes = to[t + 1] - to[t] == step / 2 && to[t + 2] - to[t + 1] == step / 2;
#if HWY_TARGET <= HWY_AVX3
    const hn::Half<DF> dh;
    const hn::Half<decltype(dh)> dq;
#endif
    if constexpr (std::is_same_v<T, uint16_t>) {
        // A block of 16 bfloat16 under windows other than 3x3/2 (whose shared columns
        // PairRowsOf3 reads once): as 16-bit integers.
        if (lanes == 16 && !threes) {
            KeyRun16<NT>(base0, step, count, to, o, ostep, rows);
            return ok;
        }
        // bfloat16 as 32-bit pairs (PairTaps) in runs of lanes: runs of 2N, then on AVX-512 one
        // of N and one of N / 2 (a block of 16 or 8 lanes is one run, in 256- or 128-bit
        // vectors), the rest of the lanes position by position. Windows of rows of three taps h
        // apart at positions 2h apart (3x3/2) read each column once (PairRowsOf3).
#if HWY_TARGET <= HWY_AVX3
        // A block of 16 lanes under 3x3/2 windows, or of 8: every row in one call. Other windows
        // on 16 lanes keep the one-vector loop below: as fast with the data in cache, and faster
        // streaming from memory (32x64x56x56, 2x2), where the pairs load each tap twice (the
        // compiler folds the load into both the shift and the AND).
        if (lanes == N && threes)
            return hn::AllTrue(dh, PairRun<NT>(dh, base0, step, count, to, o, ostep, rows, threes,
                                               hn::FirstN(dh, N / 2)))
                           ? ok
                           : hn::FirstN(d, 0);
        if (lanes == N / 2)
            return hn::AllTrue(dq, PairRun<NT>(dq, base0, step, count, to, o, ostep, rows, threes,
                                               hn::FirstN(dq, N / 4)))
                           ? ok
                           : hn::FirstN(d, 0);
#endif
        if (lanes == 2 * N)
            return PairRun<NT>(d, base0, step, count, to, o, ostep, rows, threes, ok);
        if (threes) {
            // Several runs (channels-last) of 3x3/2 windows: row by row, each run along the row
            // before the next (a run's columns shared between positions; other windows take the
            // loop below, all of a position's lanes at once, which reads each cache line once).
            const Rows2D one{1, 0, 0};
            bool all = true;
            for (size_t j = 0; j < rows.n; ++j) {
                const T* b = base0 + static_cast<ptrdiff_t>(j) * rows.step;
                T* out = o + static_cast<ptrdiff_t>(j) * rows.ostep;
                MF row = hn::FirstN(d, N);
                size_t l = 0;
#if HWY_TARGET <= HWY_AVX3
                // Two runs at once need 12 vectors kept across positions: AVX-512's 32 registers.
                if constexpr (NT % 3 == 0)
                    for (; l + 4 * N <= lanes; l += 4 * N)
                        row = PairRun<NT, DF, 2>(d, b + l, step, count, to, out + l, ostep, one,
                                                 threes, row);
#endif
                for (; l + 2 * N <= lanes; l += 2 * N)
                    row = PairRun<NT>(d, b + l, step, count, to, out + l, ostep, one, threes, row);
#if HWY_TARGET <= HWY_AVX3
                if (l + N <= lanes) {
                    all = hn::AllTrue(dh, PairRun<NT>(dh, b + l, step, count, to, out + l, ostep,
                                                      one, threes, hn::FirstN(dh, N / 2))) &&
                          all;
                    l += N;
                }
                if (l + N / 2 <= lanes) {
                    all = hn::AllTrue(dq, PairRun<NT>(dq, b + l, step, count, to, out + l, ostep,
                                                      one, threes, hn::FirstN(dq, N / 4))) &&
                          all;
                    l += N / 2;
                }
#endif
                if (l < lanes)
                    for (size_t i = 0; i < count; ++i) {
                        const T* p = b + static_cast<ptrdiff_t>(i) * step;
                        T* q = out + static_cast<ptrdiff_t>(i) * ostep;
                        MF pos = hn::FirstN(d, N);
                        for (size_t m = l; m < lanes; m += N) {
                            const size_t n = std::min(N, lanes - m);
                            VF acc = hn::Set(d, kLowest);
                            for (size_t t = 0; t < NT; ++t) {
                                const VF v = n == N ? LoadAs(d, p + to[t] + m)
                                                    : LoadFirstAs(d, p + to[t] + m, n);
                                pos = KeepOrdered(pos, v, v);
                                acc = hn::Max(v, acc);
                            }
                            StoreNAs(acc, d, q + m, n);
                        }
                        row = hn::And(row, pos);
                    }
                ok = hn::And(ok, row);
            }
            return all ? ok : hn::FirstN(d, 0);
        }
    }
#endif
    if (lanes == N) {
        // One vector per position (a channel block of N): no lane loop, and the NaN check of a
        // whole row ANDed once.
        for (size_t j = 0; j < rows.n; ++j) {
            const T* b = base0 + static_cast<ptrdiff_t>(j) * rows.step;
            T* out = o + static_cast<ptrdiff_t>(j) * rows.ostep;
            MF row = hn::FirstN(d, N);
            for (size_t i = 0; i < count; ++i, b += step, out += ostep) {
                VF acc, prev;
                // A chain of its own per position, one AND into the row's.
                MF pos = hn::FirstN(d, N);
                for (size_t t = 0; t < NT; ++t) {
                    const VF v = LoadAs(d, b + to[t]);
                    if (t % 2 == 1 || t + 1 == NT)
                        pos = KeepOrdered(pos, t % 2 == 1 ? prev : v, v);
                    prev = v;
                    acc = t == 0 ? v : hn::Max(v, acc);
                }
                row = hn::And(row, pos);
                StoreFullAs(acc, d, out);
            }
            ok = hn::And(ok, row);
        }
        return ok;
    }
    for (size_t j = 0, i = 0; j < rows.n; i = 0, ++j)
        for (; i < count; ++i) {
            const T* b = base0 + static_cast<ptrdiff_t>(j) * rows.step +
                         static_cast<ptrdiff_t>(i) * step;
            T* out = o + static_cast<ptrdiff_t>(j) * rows.ostep + static_cast<ptrdiff_t>(i) * ostep;
            MF pos = hn::FirstN(d, N);
            size_t l = 0;
            if constexpr (std::is_same_v<T, uint16_t>) {
                // Pairs of bfloat16 as 32-bit lanes (see LanesBF16Pairs).
                for (; l + 2 * N <= lanes; l += 2 * N)
                    PairTaps<NT>(d, b + l, to, out + l, pos);
            } else {
                for (; l + 2 * N <= lanes; l += 2 * N) {
                    VF a0, a1;
                    for (size_t t = 0; t < NT; ++t) {
                        const VF v0 = hn::LoadU(d, b + to[t] + l),
                                 v1 = hn::LoadU(d, b + to[t] + l + N);
                        pos = KeepOrdered(pos, v0, v1);
                        a0 = t == 0 ? v0 : hn::Max(v0, a0);
                        a1 = t == 0 ? v1 : hn::Max(v1, a1);
                    }
                    hn::StoreU(a0, d, out + l);
                    hn::StoreU(a1, d, out + l + N);
                }
            }
            for (; l + N <= lanes; l += N) {
                VF acc, prev;
                for (size_t t = 0; t < NT; ++t) {
                    const VF v = LoadAs(d, b + to[t] + l);
                    if (t % 2 == 1 || t + 1 == NT)
                        pos = KeepOrdered(pos, t % 2 == 1 ? prev : v, v);
                    prev = v;
                    acc = t == 0 ? v : hn::Max(v, acc);
                }
                StoreFullAs(acc, d, out + l);
            }
            if (l < lanes) {
                VF acc = hn::Set(d, kLowest);
                for (size_t t = 0; t < NT; ++t) {
                    const VF v = LoadFirstAs(d, b + to[t] + l, lanes - l);
                    pos = KeepOrdered(pos, v, v);
                    acc = hn::Max(v, acc);
                }
                StoreNAs(acc, d, out + l, lanes - l);
            }
            ok = hn::And(ok, pos);
        }
    return ok;
}

// LanesTaps for the common tap counts (2x2 and 3x3 windows, and those cut by padding), or false.
template <class T>
HWY_INLINE bool LanesTapsFor(size_t nt, DF d, const T* base0, ptrdiff_t step, size_t count,
                             const ptrdiff_t* off, size_t lanes, T* o, ptrdiff_t ostep,
                             const Rows2D& rows, MF& ok) {
    switch (nt) {
        case 2:
            ok = LanesTaps<2>(d, base0, step, count, off, lanes, o, ostep, rows, ok);
            return true;
        case 3:
            ok = LanesTaps<3>(d, base0, step, count, off, lanes, o, ostep, rows, ok);
            return true;
        case 4:
            ok = LanesTaps<4>(d, base0, step, count, off, lanes, o, ostep, rows, ok);
            return true;
        case 6:
            ok = LanesTaps<6>(d, base0, step, count, off, lanes, o, ostep, rows, ok);
            return true;
        case 9:
            ok = LanesTaps<9>(d, base0, step, count, off, lanes, o, ostep, rows, ok);
            return true;
        default:
            return false;
    }
}

// One output position's `lanes` values by naive's rule (Step), in vectors of N.
template <class T>
void LanesExact(DF d, const T* const* rows, size_t nrows, ptrdiff_t x0, size_t nx, ptrdiff_t sx,
                size_t lanes, T* o) {
    const size_t N = hn::Lanes(d);
    for (size_t l = 0; l < lanes; l += N) {
        const size_t n = std::min(N, lanes - l);
        VF acc = hn::Set(d, kLowest);
        for (size_t r = 0; r < nrows; ++r)
            for (size_t kx = 0; kx < nx; ++kx) {
                const T* p = rows[r] + x0 + static_cast<ptrdiff_t>(kx) * sx + l;
                acc = Step(acc, n == N ? LoadAs(d, p) : LoadFirstAs(d, p, n));
            }
        StoreNAs(acc, d, o + l, n);
    }
}

// Output row by output row: the window's input rows gathered once per row, each position's lanes
// by maxps with the NaN check ANDed into one mask, and a row whose taps held a NaN computed again
// by naive's rule (NaN-free data pays for the check only).
template <class T>
void LanesOf(const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds, size_t lanes,
             const PoolDims& g) {
    const DF d;
    const size_t N = hn::Lanes(d);
    constexpr size_t kStackRows = 64;
    const T* stack_rows[kStackRows];
    std::vector<const T*> heap_rows;
    const T** rows = stack_rows;
    if (g.k[0] * g.k[1] > kStackRows) {
        heap_rows.resize(g.k[0] * g.k[1]);
        rows = heap_rows.data();
    }
    // [lo, hi) along an axis: the outputs whose windows are whole there (lo * s >= p and
    // o * s - p + k <= in).
    auto whole = [&](size_t a, size_t& lo, size_t& hi) {
        lo = std::min(g.out[a], (g.p[a] + g.s[a] - 1) / g.s[a]);
        hi = g.in[a] + g.p[a] >= g.k[a]
                     ? std::min(g.out[a], (g.in[a] + g.p[a] - g.k[a]) / g.s[a] + 1)
                     : 0;
        hi = std::max(hi, lo);
    };
    size_t xlo, xhi, ylo, yhi;
    whole(2, xlo, xhi);
    whole(1, ylo, yhi);
    const size_t taps = g.k[0] * g.k[1] * g.k[2];
    for (size_t oz = 0; oz < g.out[0]; ++oz) {
        const Span sz = SpanOf(g, 0, oz);
        // The windows whole along every axis at once, [ylo, yhi) x [xlo, xhi), when their taps
        // are few: one call (per-row setup costs as much as a row of 16-lane positions).
        bool inner_done = false, inner_done_all = false;
        if (kMaxKeepsFirst && sz.first == 0 && sz.end == g.k[0] && yhi > ylo && xhi > xlo &&
            taps <= 9) {
            ptrdiff_t off[9];
            for (size_t kz = 0; kz < g.k[0]; ++kz)
                for (size_t ky = 0; ky < g.k[1]; ++ky)
                    for (size_t kx = 0; kx < g.k[2]; ++kx)
                        off[(kz * g.k[1] + ky) * g.k[2] + kx] = static_cast<ptrdiff_t>(kz) * ss[0] +
                                                                static_cast<ptrdiff_t>(ky) * ss[1] +
                                                                static_cast<ptrdiff_t>(kx) * ss[2];
            const ptrdiff_t y =
                    static_cast<ptrdiff_t>(ylo * g.s[1]) - static_cast<ptrdiff_t>(g.p[1]);
            const ptrdiff_t x =
                    static_cast<ptrdiff_t>(xlo * g.s[2]) - static_cast<ptrdiff_t>(g.p[2]);
            MF ok = hn::FirstN(d, N);
            const Rows2D r2{yhi - ylo, static_cast<ptrdiff_t>(g.s[1]) * ss[1], ds[1]};
            inner_done = LanesTapsFor(taps, d, src + sz.start * ss[0] + y * ss[1] + x * ss[2],
                                      static_cast<ptrdiff_t>(g.s[2]) * ss[2], xhi - xlo, off, lanes,
                                      dst + static_cast<ptrdiff_t>(oz) * ds[0] +
                                              static_cast<ptrdiff_t>(ylo) * ds[1] +
                                              static_cast<ptrdiff_t>(xlo) * ds[2],
                                      ds[2], r2, ok) &&
                         hn::AllTrue(d, ok);
            // The columns cut by padding along W over the same rows: each such ox has the same
            // taps in every row of [ylo, yhi) (3x3/2 pad 1 on 16-lane blocks: one position in 28
            // per row, which per-row setup and the generic loop made cost a third of the call).
            bool edges_done = inner_done;
            for (size_t ox = 0; edges_done && ox < g.out[2]; ox = ox + 1 == xlo ? xhi : ox + 1) {
                if (ox >= xlo && ox < xhi)
                    continue;
                const Span sx = SpanOf(g, 2, ox);
                const size_t nx = sx.end - sx.first;
                if (nx == 0 || g.k[0] * g.k[1] * nx > 9) {
                    edges_done = false;
                    break;
                }
                for (size_t kz = 0; kz < g.k[0]; ++kz)
                    for (size_t ky = 0; ky < g.k[1]; ++ky)
                        for (size_t kx = 0; kx < nx; ++kx)
                            off[(kz * g.k[1] + ky) * nx + kx] = static_cast<ptrdiff_t>(kz) * ss[0] +
                                                                static_cast<ptrdiff_t>(ky) * ss[1] +
                                                                static_cast<ptrdiff_t>(kx) * ss[2];
                const ptrdiff_t xe = sx.start + static_cast<ptrdiff_t>(sx.first);
                MF eok = hn::FirstN(d, N);
                edges_done = LanesTapsFor(g.k[0] * g.k[1] * nx, d,
                                          src + sz.start * ss[0] + y * ss[1] + xe * ss[2], 0, 1,
                                          off, lanes,
                                          dst + static_cast<ptrdiff_t>(oz) * ds[0] +
                                                  static_cast<ptrdiff_t>(ylo) * ds[1] +
                                                  static_cast<ptrdiff_t>(ox) * ds[2],
                                          0, r2, eok) &&
                             hn::AllTrue(d, eok);
            }
            if (edges_done)
                inner_done_all = true;
        }
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const bool inner_row = inner_done && oy >= ylo && oy < yhi;
            if (inner_row && (inner_done_all || (xlo == 0 && xhi == g.out[2])))
                continue;
            const Span sy = SpanOf(g, 1, oy);
            size_t nrows = 0;
            for (size_t kz = sz.first; kz < sz.end; ++kz)
                for (size_t ky = sy.first; ky < sy.end; ++ky)
                    rows[nrows++] = src + (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                    (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
            T* orow = dst + static_cast<ptrdiff_t>(oz) * ds[0] + static_cast<ptrdiff_t>(oy) * ds[1];
            MF ok = hn::FirstN(d, N);
            // The positions whose windows are whole along W, [lo, hi): the same taps each.
            size_t lo = 0, hi = 0;
            if (inner_row) {
                lo = xlo;
                hi = xhi;
            } else if (kMaxKeepsFirst && nrows > 0) {
                lo = xlo;
                hi = xhi;
                ptrdiff_t off[9];
                const size_t nt = nrows * g.k[2];
                if (nt <= 9 && hi > lo) {
                    for (size_t r = 0; r < nrows; ++r)
                        for (size_t kx = 0; kx < g.k[2]; ++kx)
                            off[r * g.k[2] + kx] =
                                    (rows[r] - rows[0]) + static_cast<ptrdiff_t>(kx) * ss[2];
                    const ptrdiff_t x =
                            static_cast<ptrdiff_t>(lo * g.s[2]) - static_cast<ptrdiff_t>(g.p[2]);
                    if (!LanesTapsFor(nt, d, rows[0] + x * ss[2],
                                      static_cast<ptrdiff_t>(g.s[2]) * ss[2], hi - lo, off, lanes,
                                      orow + static_cast<ptrdiff_t>(lo) * ds[2], ds[2],
                                      Rows2D{1, 0, 0}, ok))
                        hi = lo;
                } else {
                    hi = lo;
                }
            }
            for (int exact = kMaxKeepsFirst ? 0 : 1; exact < 2; ++exact) {
                for (size_t ox = 0; ox < g.out[2]; ++ox) {
                    if (!exact && ox >= lo && ox < hi)
                        continue;
                    const Span sx = SpanOf(g, 2, ox);
                    T* o = orow + static_cast<ptrdiff_t>(ox) * ds[2];
                    const ptrdiff_t x0 = (sx.start + static_cast<ptrdiff_t>(sx.first)) * ss[2];
                    const size_t nx = sx.end - sx.first;
                    if (nrows == 0 || nx == 0) {
                        for (size_t l = 0; l < lanes; l += N)
                            StoreNAs(hn::Set(d, kLowest), d, o + l, std::min(N, lanes - l));
                    } else if (exact) {
                        LanesExact(d, rows, nrows, x0, nx, ss[2], lanes, o);
                    } else {
                        ok = LanesFast(d, rows, nrows, x0, nx, ss[2], lanes, o, ok);
                    }
                }
                if (hn::AllTrue(d, ok))
                    break;
            }
        }
    }
}

void MaxPoolRows(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                 const PoolDims& g) {
    RowsOf(src, ss, dst, ds, g);
}

void MaxPoolRowsBF16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst, const ptrdiff_t* ds,
                     const PoolDims& g) {
    RowsOf(src, ss, dst, ds, g);
}

void MaxPoolLanes(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                  size_t lanes, const PoolDims& g) {
    LanesOf(src, ss, dst, ds, lanes, g);
}

void MaxPoolLanesBF16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst, const ptrdiff_t* ds,
                      size_t lanes, const PoolDims& g) {
    LanesOf(src, ss, dst, ds, lanes, g);
}

bool AnyNaNOrMinusInf(const float* p, size_t n) {
    const DF d;
    const size_t N = hn::Lanes(d);
    const VF minus_inf = hn::Neg(hn::Inf(d));
    size_t i = 0;
    auto bad = hn::Zero(d);
    // NaN and -inf lanes accumulate, tested once per block.
    const auto odd = [&](VF v) { return hn::Or(hn::IsNaN(v), hn::Eq(v, minus_inf)); };
    for (; i + 4 * N <= n; i += 4 * N) {
        const VF a = hn::LoadU(d, p + i), b = hn::LoadU(d, p + i + N);
        const VF c = hn::LoadU(d, p + i + 2 * N), e = hn::LoadU(d, p + i + 3 * N);
        bad = hn::Or(bad,
                     hn::VecFromMask(d, hn::Or(hn::Or(odd(a), odd(b)), hn::Or(odd(c), odd(e)))));
        if ((i & (64 * N - 1)) == 0 && !hn::AllFalse(d, hn::MaskFromVec(bad)))
            return true;
    }
    if (!hn::AllFalse(d, hn::MaskFromVec(bad)))
        return true;
    for (; i < n; ++i)
        if (std::isnan(p[i]) || p[i] == -std::numeric_limits<float>::infinity())
            return true;
    return false;
}

// A bfloat16 NaN: all exponent bits and some mantissa bit, so its bits without the sign exceed
// those of infinity; -inf is 0xFF80.
bool AnyNaNOrMinusInfBF16(const uint16_t* p, size_t n) {
    const hn::ScalableTag<int16_t> d;
    const size_t N = hn::Lanes(d);
    const auto* q = reinterpret_cast<const int16_t*>(p);
    const auto magnitude = hn::Set(d, int16_t(0x7FFF)), inf = hn::Set(d, int16_t(0x7F80));
    const auto minus_inf = hn::Set(d, static_cast<int16_t>(0xFF80));
    auto over = [&](size_t i) {
        const auto v = hn::LoadU(d, q + i);
        return hn::Or(hn::Gt(hn::And(v, magnitude), inf), hn::Eq(v, minus_inf));
    };
    size_t i = 0;
    for (; i + 4 * N <= n; i += 4 * N) {
        const auto bad =
                hn::Or(hn::Or(over(i), over(i + N)), hn::Or(over(i + 2 * N), over(i + 3 * N)));
        if (!hn::AllFalse(d, bad))
            return true;
    }
    for (; i < n; ++i)
        if ((p[i] & 0x7FFF) > 0x7F80 || p[i] == 0xFF80)
            return true;
    return false;
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(MaxPoolRows);
HWY_EXPORT(MaxPoolRowsBF16);
HWY_EXPORT(MaxPoolLanes);
HWY_EXPORT(MaxPoolLanesBF16);
HWY_EXPORT(AnyNaNOrMinusInf);
HWY_EXPORT(AnyNaNOrMinusInfBF16);

void max_pool_rows(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                   const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolRows)(src, ss, dst, ds, g);
}

void max_pool_rows_bf16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst,
                        const ptrdiff_t* ds, const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolRowsBF16)(src, ss, dst, ds, g);
}

void max_pool_lanes(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                    size_t lanes, const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanes)(src, ss, dst, ds, lanes, g);
}

void max_pool_lanes_bf16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst,
                         const ptrdiff_t* ds, size_t lanes, const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanesBF16)(src, ss, dst, ds, lanes, g);
}

bool any_nan_or_minus_inf_bf16(const uint16_t* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(AnyNaNOrMinusInfBF16)(p, n);
}

bool any_nan_or_minus_inf(const float* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(AnyNaNOrMinusInf)(p, n);
}

}  // namespace neomeg::dnn::x86
#endif
