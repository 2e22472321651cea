// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. Only the AVX-512
// target has kernels (depthwise_3x3_avx512_hwy.h): valignd, vpermt2ps with a two-source table and
// vshufps within blocks are not in Highway 1.0's portable set, so they use the raw registers of
// Highway's vectors, as depthwise_aligned_hwy.cpp does.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_3x3_avx512_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "src/x86/depthwise_3x3_avx512_hwy.h"
// clang-format off: after highway.h
#include "src/x86/depthwise_blocks_hwy-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3
// Its own namespace: other files of this target have loops of these names.
namespace rows {
using DF = hn::Full512<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;
constexpr size_t N = 16;
constexpr size_t kRows = 4;
// Output vectors per row that the per-call tables hold (1024 outputs).
constexpr size_t kMaxVecs = 64;

#define NM_INLINE __attribute__((always_inline))

// Lane 0 the last lane of prev, lanes 1..15 lanes 0..14 of v: odd column o - 1 for output o.
HWY_INLINE VF UpOne(VF v, VF prev) {
    return VF{_mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(v.raw), _mm512_castps_si512(prev.raw), 15))};
}

// Input pair j: the columns [32j, 32j + 32) of a row, as two loads masked to the plane's w
// columns: `masked` 0 where the pair is whole, 1 where only its second load passes w, 2 where
// both do. Masked loads measured 25% slower than plain ones (3x3 stride 2 in cache, 56 against 64
// columns), so only the loads that need a mask take one.
struct Pair {
    MF lo, hi;
    int masked;
};

HWY_INLINE Pair PairOf(DF d, size_t j, size_t w) {
    auto in = [&](size_t c0) { return hn::FirstN(d, c0 >= w ? 0 : std::min(N, w - c0)); };
    const int masked = 2 * N * (j + 1) <= w ? 0 : 2 * N * j + N <= w ? 1 : 2;
    return {in(2 * N * j), in(2 * N * j + N), masked};
}

// Even and odd columns of pair j of row s (its loads masked as kMasked says).
template <int kMasked>
HWY_INLINE void Split(DF d, const float* s, const Pair& p, size_t j, VF& even, VF& odd) {
    const float* c = s + 2 * N * j;
    const VF a = kMasked > 1 ? hn::MaskedLoad(p.lo, d, c) : hn::LoadU(d, c);
    const VF b = kMasked > 0 ? hn::MaskedLoad(p.hi, d, c + N) : hn::LoadU(d, c + N);
    even = hn::ConcatEven(d, b, a);
    odd = hn::ConcatOdd(d, b, a);
}

// Even and odd columns of pair j of row s in blocks::kBlockLane's order (vshufps within 128-bit
// blocks, which measured cheaper than the cross-block ConcatEven / ConcatOdd).
template <int kMasked>
HWY_INLINE void SplitInBlocks(DF d, const float* s, const Pair& p, size_t j, VF& even, VF& odd) {
    const float* c = s + 2 * N * j;
    const VF a = kMasked > 1 ? hn::MaskedLoad(p.lo, d, c) : hn::LoadU(d, c);
    const VF b = kMasked > 0 ? hn::MaskedLoad(p.hi, d, c + N) : hn::LoadU(d, c + N);
    even = blocks::EvenInBlocks(a, b);
    odd = blocks::OddInBlocks(a, b);
}

// For vpermt2ps of (odd, prev) in kBlockLane's order: lane l takes the odd column of output
// kBlockLane[l] - 1 (from prev's last output where that is -1).
struct UpOneTable {
    alignas(64) int32_t idx[16];
    constexpr UpOneTable() : idx{} {
        for (size_t l = 0; l < 16; ++l) {
            const int32_t o = blocks::kBlockLane[l] - 1;
            idx[l] = o < 0 ? 16 + blocks::kLaneOf[15] : blocks::kLaneOf[o];
        }
    }
};
alignas(64) constexpr UpOneTable kUpOneTable{};
constexpr const int32_t* kUpOneInBlocks = kUpOneTable.idx;

// R output rows from oy0 by V vectors from j0; the tile's last pair's loads masked as kMasked
// says (the loops take planes whose other pairs are whole).
template <size_t R, size_t V, int kMasked>
HWY_INLINE void Tile(const DwSource& x, const Pair* pairs, const float* wt, float* o,
                     ptrdiff_t out_row, size_t oy0, size_t j0, size_t ow, bool accumulate) {
    const DF d;
    // The weights broadcast per tile, locals as the sums: kept in registers (from an array of
    // the caller's, every FMA read its weight from the stack).
    VF w[9];
    for (size_t k = 0; k < 9; ++k)
        w[k] = hn::Set(d, wt[k]);
    VF acc[R][V];
    for (size_t r = 0; r < R; ++r)
        for (size_t v = 0; v < V; ++v) {
            const size_t ox = (j0 + v) * N;
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox;
            if (!accumulate)
                acc[r][v] = hn::Zero(d);
            else if (ox + N <= ow)
                acc[r][v] = blocks::ToLanes(hn::LoadU(d, p));
            else
                acc[r][v] = blocks::ToLanes(hn::MaskedLoad(hn::FirstN(d, ow - ox), d, p));
        }
    const auto up_one = _mm512_load_si512(kUpOneInBlocks);
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(2 * oy0) - x.top;
    Unroll<2 * (R - 1) + 3>([&](auto I) NM_INLINE {
        constexpr size_t i = decltype(I)::value;
        const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
        if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
            return;
        const float* s = x.data + y * x.row;
        VF prev = hn::Zero(d), even;
        if (j0 > 0)
            SplitInBlocks<0>(d, s, pairs[j0 - 1], j0 - 1, even, prev);
        Unroll<V>([&](auto VV) NM_INLINE {
            constexpr size_t v = decltype(VV)::value;
            VF odd;
            SplitInBlocks<v + 1 == V ? kMasked : 0>(d, s, pairs[j0 + v], j0 + v, even, odd);
            const VF t0{_mm512_permutex2var_ps(odd.raw, up_one, prev.raw)};
            prev = odd;
            Unroll<R>([&](auto RR) NM_INLINE {
                constexpr size_t r = decltype(RR)::value;
                if constexpr (i >= 2 * r && i - 2 * r < 3) {
                    constexpr size_t ky = i - 2 * r;
                    acc[r][v] = hn::MulAdd(w[ky * 3], t0, acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 1], even, acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 2], odd, acc[r][v]);
                }
            });
        });
    });
    for (size_t r = 0; r < R; ++r)
        for (size_t v = 0; v < V; ++v) {
            const size_t ox = (j0 + v) * N;
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox;
            const VF out = blocks::ToMemory(acc[r][v]);
            if (ox + N <= ow)
                hn::StoreU(out, d, p);
            else
                hn::BlendedStore(out, hn::FirstN(d, ow - ox), d, p);
        }
}

template <size_t R>
HWY_INLINE void Band(const DwSource& x, const Pair* pairs, size_t nvec, const float* w, float* out,
                     ptrdiff_t out_row, size_t oy0, size_t ow, bool accumulate) {
    float* o = out + static_cast<ptrdiff_t>(oy0) * out_row;
    auto tile = [&](auto VC, size_t j) {
        constexpr size_t V = decltype(VC)::value;
        switch (pairs[j + V - 1].masked) {
            case 0:
                return Tile<R, V, 0>(x, pairs, w, o, out_row, oy0, j, ow, accumulate);
            case 1:
                return Tile<R, V, 1>(x, pairs, w, o, out_row, oy0, j, ow, accumulate);
            default:
                return Tile<R, V, 2>(x, pairs, w, o, out_row, oy0, j, ow, accumulate);
        }
    };
    size_t j = 0;
    for (; j + 2 <= nvec; j += 2)
        tile(std::integral_constant<size_t, 2>{}, j);
    if (j < nvec)
        tile(std::integral_constant<size_t, 1>{}, j);
}

// Whether only the row's last pair passes the plane's columns (so for the outputs of one column
// of left padding on both sides: 2 * (ow - 1) < w).
bool OnlyLastPairMasked(const Pair* pairs, size_t nvec) {
    for (size_t j = 0; j + 1 < nvec; ++j)
        if (pairs[j].masked != 0)
            return false;
    return true;
}

bool Correlate(const DwSource& x, const float* wt, float* out, ptrdiff_t out_row, size_t oh,
               size_t ow, bool accumulate) {
    const DF d;
    const size_t nvec = (ow + N - 1) / N;
    if (x.left != 1 || nvec > kMaxVecs)
        return false;
    Pair pairs[kMaxVecs];
    for (size_t j = 0; j < nvec; ++j)
        pairs[j] = PairOf(d, j, x.w);
    if (!OnlyLastPairMasked(pairs, nvec))
        return false;
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows) {
        prefetch_next_rows(x, 2 * static_cast<ptrdiff_t>(oy) - x.top,
                           2 * static_cast<ptrdiff_t>(oy + kRows) - x.top);
        Band<kRows>(x, pairs, nvec, wt, out, out_row, oy, ow, accumulate);
    }
    for (; oy < oh; ++oy) {
        prefetch_next_rows(x, 2 * static_cast<ptrdiff_t>(oy) - x.top,
                           2 * static_cast<ptrdiff_t>(oy + 1) - x.top + 1);
        Band<1>(x, pairs, nvec, wt, out, out_row, oy, ow, accumulate);
    }
    return true;
}

// The filter gradient's vector j of diff's columns: its input pair, and the lanes of outputs o
// that meet diff (o < ow) and the diff moved down one output (o + 1 < ow). The loop takes planes
// of w <= 2 ow columns, where the pair's lanes of outputs o >= ow read no column of the plane
// (zero by the loads' masks); tap 0's sum masks the odd column of output ow - 1, which only tap 2
// reads (an infinity there would give NaN against a zero diff).
struct GradColumn {
    Pair in;
    MF dv, dvs, dvs_lanes;
};

// Vector j of diff's columns down the whole plane, into `total`. The sums are local to this
// function, the bands' lambda inlined into it: across a loop over the columns inside the bands
// GCC kept them on the stack (a store and a reload per FMA, 580 ns per 56x56 plane in cache).
template <int kMasked, bool kEdge>
HWY_INLINE void GradColumnDown(DF d, const DwSource& x, const GradColumn& col, const float* diff,
                               ptrdiff_t diff_row, size_t oh, size_t j, VF (&total)[9]) {
    VF acc[9];
    for (size_t k = 0; k < 9; ++k)
        acc[k] = hn::Zero(d);
    // Diff's rows oy0 .. oy0 + R - 1 against their taps.
    auto band = [&](auto RC, size_t oy0) NM_INLINE {
        constexpr size_t R = decltype(RC)::value;
        VF dv[R], dvs[R];
        for (size_t r = 0; r < R; ++r) {
            const float* p = diff + static_cast<ptrdiff_t>(oy0 + r) * diff_row + j * N;
            dv[r] = blocks::ToLanes(kEdge ? hn::MaskedLoad(col.dv, d, p) : hn::LoadU(d, p));
            dvs[r] = blocks::ToLanes(kEdge ? hn::MaskedLoad(col.dvs, d, p + 1)
                                           : hn::LoadU(d, p + 1));
        }
        const ptrdiff_t y0 = static_cast<ptrdiff_t>(2 * oy0) - x.top;
        Unroll<2 * (R - 1) + 3>([&](auto I) NM_INLINE {
            constexpr size_t i = decltype(I)::value;
            const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
            if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
                return;
            const float* c = x.data + y * x.row + 2 * N * j;
            const VF a = kMasked > 1 ? hn::MaskedLoad(col.in.lo, d, c) : hn::LoadU(d, c);
            const VF b = kMasked > 0 ? hn::MaskedLoad(col.in.hi, d, c + N) : hn::LoadU(d, c + N);
            const VF even = blocks::EvenInBlocks(a, b), odd = blocks::OddInBlocks(a, b);
            const VF odd0 = kEdge ? hn::IfThenElseZero(col.dvs_lanes, odd) : odd;
            Unroll<R>([&](auto RR) NM_INLINE {
                constexpr size_t r = decltype(RR)::value;
                if constexpr (i >= 2 * r && i - 2 * r < 3) {
                    constexpr size_t k = (i - 2 * r) * 3;
                    acc[k] = hn::MulAdd(dvs[r], odd0, acc[k]);
                    acc[k + 1] = hn::MulAdd(dv[r], even, acc[k + 1]);
                    acc[k + 2] = hn::MulAdd(dv[r], odd, acc[k + 2]);
                }
            });
        });
    };
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows)
        band(std::integral_constant<size_t, kRows>{}, oy);
    for (; oy < oh; ++oy)
        band(std::integral_constant<size_t, 1>{}, oy);
    for (size_t k = 0; k < 9; ++k)
        total[k] = hn::Add(total[k], acc[k]);
}

bool FilterGrad(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                double* g) {
    const DF d;
    const size_t nvec = (ow + N - 1) / N;
    if (x.left != 1 || nvec > kMaxVecs || x.w > 2 * ow)
        return false;
    VF total[9];
    for (size_t k = 0; k < 9; ++k)
        total[k] = hn::Zero(d);
    for (size_t j = 0; j < nvec; ++j) {
        const size_t o = N * j;
        GradColumn c;
        c.in = PairOf(d, j, x.w);
        c.dv = hn::FirstN(d, std::min(N, ow - o));
        c.dvs = hn::FirstN(d, o + 1 >= ow ? 0 : std::min(N, ow - 1 - o));
        {
            const hn::RebindToSigned<DF> di;
            const auto lanes =
                    hn::Add(hn::Set(di, static_cast<int32_t>(o)), hn::Load(di, blocks::kBlockLane));
            c.dvs_lanes =
                    hn::RebindMask(d, hn::Lt(lanes, hn::Set(di, static_cast<int32_t>(ow) - 1)));
        }
        const bool edge = o + N + 1 > ow;
        if (c.in.masked == 0 && !edge)
            GradColumnDown<0, false>(d, x, c, diff, diff_row, oh, j, total);
        else if (c.in.masked == 0)
            GradColumnDown<0, true>(d, x, c, diff, diff_row, oh, j, total);
        else if (c.in.masked == 1)
            GradColumnDown<1, true>(d, x, c, diff, diff_row, oh, j, total);
        else
            GradColumnDown<2, true>(d, x, c, diff, diff_row, oh, j, total);
    }
    for (size_t k = 0; k < 9; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, total[k])));
    return true;
}

// Lane 15 of prev, then lanes 0..14 of v (column m - 1 for lane m of v); lanes 1..15 of v, then
// lane 0 of next (column m + 1).
HWY_INLINE VF LeftOne(VF v, VF prev) {
    return UpOne(v, prev);
}
HWY_INLINE VF RightOne(VF next, VF v) {
    return VF{_mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(next.raw), _mm512_castps_si512(v.raw), 1))};
}

// The stride-1 correlation, R output rows from oy0 by V vectors from j0: output m's taps read
// columns m - 1, m, m + 1, made from each input row's aligned loads of vectors j0 - 1 .. j0 + V
// by valignd. kMasked: a vector the tile loads is the row's last and partial (masked to w).
template <size_t R, size_t V, bool kMasked>
HWY_INLINE void S1Tile(const DwSource& x, const MF* cols, size_t nvec, const float* wt, float* o,
                       ptrdiff_t out_row, size_t oy0, size_t j0, size_t ow, bool accumulate) {
    const DF d;
    VF w[9];
    for (size_t k = 0; k < 9; ++k)
        w[k] = hn::Set(d, wt[k]);
    VF acc[R][V];
    for (size_t r = 0; r < R; ++r)
        for (size_t v = 0; v < V; ++v) {
            const size_t ox = (j0 + v) * N;
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox;
            if (!accumulate)
                acc[r][v] = hn::Zero(d);
            else if (ox + N <= ow)
                acc[r][v] = hn::LoadU(d, p);
            else
                acc[r][v] = hn::MaskedLoad(hn::FirstN(d, ow - ox), d, p);
        }
    const bool has_left = j0 > 0, has_right = j0 + V < nvec;
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(oy0) - x.top;
    Unroll<R + 2>([&](auto I) NM_INLINE {
        constexpr size_t i = decltype(I)::value;
        const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
        if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
            return;
        const float* s = x.data + y * x.row + j0 * N;
        auto load = [&](ptrdiff_t v) NM_INLINE {
            const float* p = s + v * static_cast<ptrdiff_t>(N);
            return kMasked ? hn::MaskedLoad(cols[static_cast<ptrdiff_t>(j0) + v], d, p)
                           : hn::LoadU(d, p);
        };
        VF xv[V + 2];
        xv[0] = has_left ? hn::LoadU(d, s - N) : hn::Zero(d);
        for (size_t v = 0; v < V; ++v)
            xv[v + 1] = load(static_cast<ptrdiff_t>(v));
        xv[V + 1] = has_right ? load(static_cast<ptrdiff_t>(V)) : hn::Zero(d);
        Unroll<V>([&](auto VV) NM_INLINE {
            constexpr size_t v = decltype(VV)::value;
            const VF t0 = LeftOne(xv[v + 1], xv[v]), t2 = RightOne(xv[v + 2], xv[v + 1]);
            Unroll<R>([&](auto RR) NM_INLINE {
                constexpr size_t r = decltype(RR)::value;
                if constexpr (i >= r && i - r < 3) {
                    constexpr size_t ky = i - r;
                    acc[r][v] = hn::MulAdd(w[ky * 3], t0, acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 1], xv[v + 1], acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 2], t2, acc[r][v]);
                }
            });
        });
    });
    for (size_t r = 0; r < R; ++r)
        for (size_t v = 0; v < V; ++v) {
            const size_t ox = (j0 + v) * N;
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox;
            if (ox + N <= ow)
                hn::StoreU(acc[r][v], d, p);
            else
                hn::BlendedStore(acc[r][v], hn::FirstN(d, ow - ox), d, p);
        }
}

template <size_t R>
HWY_INLINE void S1Band(const DwSource& x, const MF* cols, size_t nvec, bool last_masked,
                       const float* w, float* out, ptrdiff_t out_row, size_t oy0, size_t ow,
                       bool accumulate) {
    float* o = out + static_cast<ptrdiff_t>(oy0) * out_row;
    constexpr size_t V = 2;
    for (size_t j = 0; j < nvec;) {
        const size_t v = std::min(V, nvec - j);
        // Whether the tile loads the row's last vector (its right neighbour included).
        const bool masked = last_masked && j + v + 1 >= nvec;
        if (v == V)
            masked ? S1Tile<R, V, true>(x, cols, nvec, w, o, out_row, oy0, j, ow, accumulate)
                   : S1Tile<R, V, false>(x, cols, nvec, w, o, out_row, oy0, j, ow, accumulate);
        else
            masked ? S1Tile<R, 1, true>(x, cols, nvec, w, o, out_row, oy0, j, ow, accumulate)
                   : S1Tile<R, 1, false>(x, cols, nvec, w, o, out_row, oy0, j, ow, accumulate);
        j += v;
    }
}

bool S1Correlate(const DwSource& x, const float* wt, float* out, ptrdiff_t out_row, size_t oh,
                 size_t ow, bool accumulate) {
    const DF d;
    const size_t nvec = (ow + N - 1) / N;
    if (x.left != 1 || x.w != ow || nvec > kMaxVecs)
        return false;
    MF cols[kMaxVecs];
    for (size_t j = 0; j < nvec; ++j)
        cols[j] = hn::FirstN(d, std::min(N, ow - N * j));
    const bool last_masked = ow % N != 0;
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows)
        S1Band<kRows>(x, cols, nvec, last_masked, wt, out, out_row, oy, ow, accumulate);
    for (; oy < oh; ++oy)
        S1Band<1>(x, cols, nvec, last_masked, wt, out, out_row, oy, ow, accumulate);
    return true;
}

// The stride-1 filter gradient, vector j of X's columns (m = 16j + l) down the whole plane,
// into `total`: tap kx of output o reads column o + kx - 1, so its sum is that of X(m) against
// diff(m + 1 - kx), diff loaded one column right (kx = 0), in place and one column left (kx = 2)
// against each input row's one load from the row's start. The loads split a cache line at most
// once per row (every other row of a 56-column plane is 64-byte aligned), where the three taps'
// loads from m - 1, m and m + 1 split one each, and no shuffles. w == ow (the taps' one column of
// padding on each side); kFirst, kLast: vector j is the row's first (column -1 of diff in lane
// 0), its last (lanes past ow).
template <bool kFirst, bool kLast>
HWY_INLINE void S1GradColumnDown(DF d, const DwSource& x, const float* diff, ptrdiff_t diff_row,
                                 size_t oh, size_t ow, size_t j, VF (&total)[9]) {
    const size_t m0 = N * j;
    const MF in = hn::FirstN(d, std::min(N, ow - m0));
    // Lanes whose diff(m + 1), diff(m - 1) lie in the row.
    const MF right = hn::FirstN(d, m0 + 1 >= ow ? 0 : std::min(N, ow - 1 - m0));
    const MF left =
            hn::AndNot(hn::FirstN(d, kFirst ? 1 : 0), hn::FirstN(d, std::min(N, ow + 1 - m0)));
    VF acc[9];
    for (size_t k = 0; k < 9; ++k)
        acc[k] = hn::Zero(d);
    auto band = [&](auto RC, size_t oy0) NM_INLINE {
        constexpr size_t R = decltype(RC)::value;
        VF dr[R], dc[R], dl[R];
        for (size_t r = 0; r < R; ++r) {
            const float* p = diff + static_cast<ptrdiff_t>(oy0 + r) * diff_row + m0;
            dc[r] = kLast ? hn::MaskedLoad(in, d, p) : hn::LoadU(d, p);
            dr[r] = kLast ? hn::MaskedLoad(right, d, p + 1) : hn::LoadU(d, p + 1);
            dl[r] = kFirst || kLast ? hn::MaskedLoad(left, d, p - 1) : hn::LoadU(d, p - 1);
        }
        const ptrdiff_t y0 = static_cast<ptrdiff_t>(oy0) - x.top;
        Unroll<R + 2>([&](auto I) NM_INLINE {
            constexpr size_t i = decltype(I)::value;
            const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
            if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
                return;
            const float* s = x.data + y * x.row + m0;
            const VF xc = kLast ? hn::MaskedLoad(in, d, s) : hn::LoadU(d, s);
            // A column that a tap's sum does not read stays out of it (an infinity there would
            // give NaN against the zero diff).
            const VF x0 = kLast ? hn::IfThenElseZero(right, xc) : xc;
            const VF x2 = kFirst ? hn::IfThenElseZero(left, xc) : xc;
            Unroll<R>([&](auto RR) NM_INLINE {
                constexpr size_t r = decltype(RR)::value;
                if constexpr (i >= r && i - r < 3) {
                    constexpr size_t k = (i - r) * 3;
                    acc[k] = hn::MulAdd(dr[r], x0, acc[k]);
                    acc[k + 1] = hn::MulAdd(dc[r], xc, acc[k + 1]);
                    acc[k + 2] = hn::MulAdd(dl[r], x2, acc[k + 2]);
                }
            });
        });
    };
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows)
        band(std::integral_constant<size_t, kRows>{}, oy);
    for (; oy < oh; ++oy)
        band(std::integral_constant<size_t, 1>{}, oy);
    for (size_t k = 0; k < 9; ++k)
        total[k] = hn::Add(total[k], acc[k]);
}

bool S1FilterGrad(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                  double* g) {
    const DF d;
    if (x.left != 1 || x.w != ow)
        return false;
    const size_t nvec = (ow + N - 1) / N;
    VF total[9];
    for (size_t k = 0; k < 9; ++k)
        total[k] = hn::Zero(d);
    for (size_t j = 0; j < nvec; ++j) {
        const bool first = j == 0, last = N * (j + 1) >= ow;
        if (first && last)
            S1GradColumnDown<true, true>(d, x, diff, diff_row, oh, ow, j, total);
        else if (first)
            S1GradColumnDown<true, false>(d, x, diff, diff_row, oh, ow, j, total);
        else if (last)
            S1GradColumnDown<false, true>(d, x, diff, diff_row, oh, ow, j, total);
        else
            S1GradColumnDown<false, false>(d, x, diff, diff_row, oh, ow, j, total);
    }
    for (size_t k = 0; k < 9; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, total[k])));
    return true;
}

// The stride-2 input gradient (one column and row of padding, one output channel per input
// channel), vector j of diff's columns q (16j + l) down the plane. Input column 2q is tap 1 of
// output q, column 2q + 1 taps 2 of q and 0 of q + 1; input row 2p is tap row 1 of diff row p,
// row 2p + 1 tap rows 2 of p and 0 of p + 1. So each pair of input rows takes diff rows p and
// p + 1, each loaded in place and one column right, nine FMAs, and the even and odd columns
// interleaved into two vectors of each row (vpermt2ps).
template <bool kLast>
HWY_INLINE void S2GradDataColumn(const float* dy, ptrdiff_t dy_row, size_t oh, size_t ow,
                                 const VF (&w)[9], float* dx, ptrdiff_t dx_row, size_t h,
                                 size_t width, size_t j) {
    const DF d;
    const size_t q0 = N * j;
    const MF in = hn::FirstN(d, std::min(N, ow - q0));
    const MF right = hn::FirstN(d, q0 + 1 >= ow ? 0 : std::min(N, ow - 1 - q0));
    const size_t c0 = 2 * q0;
    const MF out_lo = hn::FirstN(d, c0 >= width ? 0 : std::min(N, width - c0));
    const MF out_hi = hn::FirstN(d, c0 + N >= width ? 0 : std::min(N, width - c0 - N));
    const auto lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const auto hi_idx =
            _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    auto load = [&](size_t oy, VF& dv, VF& dvs) NM_INLINE {
        if (oy >= oh) {
            dv = dvs = hn::Zero(d);
            return;
        }
        const float* p = dy + static_cast<ptrdiff_t>(oy) * dy_row + q0;
        dv = kLast ? hn::MaskedLoad(in, d, p) : hn::LoadU(d, p);
        dvs = kLast ? hn::MaskedLoad(right, d, p + 1) : hn::LoadU(d, p + 1);
    };
    auto store = [&](size_t iy, VF even, VF odd) NM_INLINE {
        float* o = dx + static_cast<ptrdiff_t>(iy) * dx_row + c0;
        const VF lo{_mm512_permutex2var_ps(even.raw, lo_idx, odd.raw)};
        const VF hi{_mm512_permutex2var_ps(even.raw, hi_idx, odd.raw)};
        if constexpr (kLast) {
            hn::BlendedStore(lo, out_lo, d, o);
            hn::BlendedStore(hi, out_hi, d, o + N);
        } else {
            hn::StoreU(lo, d, o);
            hn::StoreU(hi, d, o + N);
        }
    };
    VF dv, dvs;
    load(0, dv, dvs);
    for (size_t p = 0; 2 * p < h; ++p) {
        // Row 2p: tap row 1 of diff row p.
        store(2 * p, hn::Mul(w[4], dv), hn::MulAdd(w[3], dvs, hn::Mul(w[5], dv)));
        if (2 * p + 1 >= h)
            break;
        // Row 2p + 1: tap row 2 of diff row p, tap row 0 of p + 1.
        VF nv, nvs;
        load(p + 1, nv, nvs);
        const VF even = hn::MulAdd(w[1], nv, hn::Mul(w[7], dv));
        VF odd = hn::MulAdd(w[6], dvs, hn::Mul(w[8], dv));
        odd = hn::MulAdd(w[0], nvs, hn::MulAdd(w[2], nv, odd));
        store(2 * p + 1, even, odd);
        dv = nv;
        dvs = nvs;
    }
}

bool S2GradData(const float* dy, ptrdiff_t dy_row, size_t oh, size_t ow, const float* wt, float* dx,
                ptrdiff_t dx_row, size_t h, size_t width) {
    const DF d;
    // The input's size as the forward's windows give it (no preset larger input).
    if ((width + 1) / 2 != ow || (h + 1) / 2 != oh)
        return false;
    VF w[9];
    for (size_t k = 0; k < 9; ++k)
        w[k] = hn::Set(d, wt[k]);
    const size_t nvec = (ow + N - 1) / N;
    for (size_t j = 0; j < nvec; ++j) {
        if (N * (j + 1) + 1 > ow)
            S2GradDataColumn<true>(dy, dy_row, oh, ow, w, dx, dx_row, h, width, j);
        else
            S2GradDataColumn<false>(dy, dy_row, oh, ow, w, dx, dx_row, h, width, j);
    }
    return true;
}

#undef NM_INLINE
}  // namespace rows

bool S2Correlate512(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                    size_t ow, bool accumulate) {
    if (oh == 0 || ow == 0)
        return x.left == 1;
    return rows::Correlate(x, w, out, out_row, oh, ow, accumulate);
}

bool S2GradData512(const float* dy, ptrdiff_t dy_row, size_t oh, size_t ow, const float* w,
                   float* dx, ptrdiff_t dx_row, size_t h, size_t width) {
    if (oh == 0 || ow == 0 || h == 0 || width == 0)
        return false;
    return rows::S2GradData(dy, dy_row, oh, ow, w, dx, dx_row, h, width);
}

bool S2GradDataSupported512() {
    return true;
}

bool S1Correlate512(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                    size_t ow, bool accumulate) {
    if (oh == 0 || ow == 0)
        return x.left == 1;
    return rows::S1Correlate(x, w, out, out_row, oh, ow, accumulate);
}

bool S1FilterGrad512(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                     double* g) {
    if (oh == 0 || ow == 0)
        return x.left == 1;
    return rows::S1FilterGrad(x, diff, diff_row, oh, ow, g);
}

bool S2FilterGrad512(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                     double* g) {
    if (oh == 0 || ow == 0)
        return x.left == 1;
    return rows::FilterGrad(x, diff, diff_row, oh, ow, g);
}
#else
bool S2Correlate512(const DwSource&, const float*, float*, ptrdiff_t, size_t, size_t, bool) {
    return false;
}

bool S2FilterGrad512(const DwSource&, const float*, ptrdiff_t, size_t, size_t, double*) {
    return false;
}

bool S1FilterGrad512(const DwSource&, const float*, ptrdiff_t, size_t, size_t, double*) {
    return false;
}

bool S1Correlate512(const DwSource&, const float*, float*, ptrdiff_t, size_t, size_t, bool) {
    return false;
}

bool S2GradData512(const float*, ptrdiff_t, size_t, size_t, const float*, float*, ptrdiff_t, size_t,
                   size_t) {
    return false;
}

bool S2GradDataSupported512() {
    return false;
}
#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(S2Correlate512);
HWY_EXPORT(S2FilterGrad512);
HWY_EXPORT(S1FilterGrad512);
HWY_EXPORT(S1Correlate512);
HWY_EXPORT(S2GradData512);
HWY_EXPORT(S2GradDataSupported512);

bool dw_correlate3x3_avx512(size_t stride, const DwSource& x, const float* w, float* out,
                            ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    if (stride == 1)
        return HWY_DYNAMIC_DISPATCH(S1Correlate512)(x, w, out, out_row, oh, ow, accumulate);
    return stride == 2 &&
           HWY_DYNAMIC_DISPATCH(S2Correlate512)(x, w, out, out_row, oh, ow, accumulate);
}

bool dw_filter_grad3x3_avx512(size_t stride, const DwSource& x, const float* diff,
                              ptrdiff_t diff_row, size_t oh, size_t ow, double* g) {
    if (stride == 1)
        return HWY_DYNAMIC_DISPATCH(S1FilterGrad512)(x, diff, diff_row, oh, ow, g);
    return stride == 2 && HWY_DYNAMIC_DISPATCH(S2FilterGrad512)(x, diff, diff_row, oh, ow, g);
}

bool dw_s2_grad_data3x3_avx512_supported() {
    return HWY_DYNAMIC_DISPATCH(S2GradDataSupported512)();
}

bool dw_s2_grad_data3x3_avx512(const float* dy, ptrdiff_t dy_row, size_t oh, size_t ow,
                               const float* w, float* dx, ptrdiff_t dx_row, size_t h,
                               size_t width) {
    return HWY_DYNAMIC_DISPATCH(S2GradData512)(dy, dy_row, oh, ow, w, dx, dx_row, h, width);
}

}  // namespace neomeg::dnn::x86
#endif
