// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_direct_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "src/x86/depthwise_3x3_avx2_hwy.h"
#include "src/x86/depthwise_3x3_avx512_hwy.h"
#include "src/x86/depthwise_aligned_hwy.h"
#include "src/x86/depthwise_direct_hwy.h"
// clang-format off: after highway.h
#include "src/x86/depthwise_blocks_hwy-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET <= HWY_AVX2
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;

// The loops' lambdas inline into their callers, so that the accumulators stay in registers.
#define NM_INLINE __attribute__((always_inline))

constexpr size_t kMaxKw = 16;
// Output rows per tile, and vectors per tile along W: R x V accumulators stay in registers
// beside the V vectors of an input row (16 registers on AVX2, 32 on AVX-512).
constexpr size_t kMaxRows = 4;
constexpr size_t kMaxVecs = HWY_TARGET <= HWY_AVX3 ? 4 : 2;
// The input rows a tile of kMaxRows output rows reads, for which the tap table below is kept.
constexpr size_t kMaxSpan = 64;

// Lanes l whose column c0 + l lies in [0, w).
HWY_INLINE MF ColumnsIn(DF d, ptrdiff_t c0, size_t w) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    ptrdiff_t lo = std::clamp<ptrdiff_t>(-c0, 0, n);
    ptrdiff_t hi = std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(w) - c0, 0, n);
    return hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                      hn::FirstN(d, static_cast<size_t>(hi)));
}

// The vector of a tap whose first column is at p: SW adjacent vectors' even lanes for a stride
// of 2, on AVX2 selected within blocks and so in kBlockLane's order (depthwise_blocks_hwy-inl.h;
// 3x3 stride 2, 128 x 56 x 56, batch 1 measured 0.19 -> 0.17 ms before that case moved to
// depthwise_3x3_avx2_hwy.cpp). An edge tile's loads are masked to the plane's columns (m: one
// mask per vector read).
template <size_t SW, bool kEdge>
HWY_INLINE VF LoadTap(DF d, const float* p, const MF* m) {
    const size_t N = hn::Lanes(d);
    auto one = [&](size_t h) NM_INLINE {
        if constexpr (kEdge)
            return hn::MaskedLoad(m[h], d, p + h * N);
        else
            return hn::LoadU(d, p + h * N);
    };
    if constexpr (SW == 1)
        return one(0);
#if HWY_TARGET == HWY_AVX2
    else
        return blocks::EvenInBlocks(one(0), one(1));
#else
    else
        return hn::ConcatEven(d, one(1), one(0));
#endif
}

// A tile's vector of outputs between memory order and the order its taps' lanes have.
template <size_t SW>
HWY_INLINE VF TapOrder(VF v) {
#if HWY_TARGET == HWY_AVX2
    if constexpr (SW == 2)
        return blocks::BlockOrder(v);
#endif
    return v;
}

// The masks of an edge tile's loads: per column tap kx, the SW vectors read from column c0 on.
template <size_t SW>
HWY_INLINE void EdgeMasks(DF d, const DwSource& x, const DwTaps& t, ptrdiff_t c0,
                          MF (&m)[kMaxKw][SW]) {
    const size_t N = hn::Lanes(d);
    for (size_t kx = 0; kx < t.kw; ++kx)
        for (size_t h = 0; h < SW; ++h)
            m[kx][h] = ColumnsIn(d, c0 + static_cast<ptrdiff_t>(kx * t.dw + h * N), x.w);
}

// Taps known when compiling: KH x KW, a row stride of SH and no dilation along H (the common
// depthwise kernels), so that a tile's schedule of input rows and taps unrolls completely.
template <size_t KH_, size_t KW_, size_t SH_>
struct Fixed {
    static constexpr size_t KH = KH_, KW = KW_, SH = SH_;
};
// Any taps: the schedule comes from the tap table.
struct Generic {};

// ky of the tap by which input row i of a tile (counted from its first output row's window)
// reaches the tile's output row r, or -1: i == r * sh + ky * dh.
struct TapTable {
    int8_t ky[kMaxSpan][kMaxRows];
};

// R output rows (from o, rows out_row apart) by V vectors of the plane's outputs from column
// ox0: an interior tile reads only columns inside the plane and stores whole vectors; an edge
// tile (V == 1) masks its loads to the plane and stores `last` outputs.
template <size_t R, size_t V, bool kEdge, size_t SW, class K>
HWY_INLINE void Tile(DF d, const DwSource& x, const DwTaps& t, const TapTable* table,
                     const float* w, float* o, ptrdiff_t out_row, size_t oy0, size_t ox0,
                     size_t last, bool accumulate) {
    const size_t N = hn::Lanes(d);
    const ptrdiff_t c0 = static_cast<ptrdiff_t>(ox0 * SW) - x.left;
    MF m[kMaxKw][SW];
    if constexpr (kEdge)
        EdgeMasks<SW>(d, x, t, c0, m);
    VF acc[R][V];
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < V; ++j) {
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox0 + j * N;
            if (!accumulate)
                acc[r][j] = hn::Zero(d);
            else if (kEdge)
                acc[r][j] = TapOrder<SW>(hn::MaskedLoad(hn::FirstN(d, last), d, p));
            else
                acc[r][j] = TapOrder<SW>(hn::LoadU(d, p));
        }
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(oy0 * t.sh) - x.top;
    // One input row's taps into every output row of the tile it reaches.
    auto row = [&](ptrdiff_t y, const int* ky) NM_INLINE {
        const float* s = x.data + y * x.row + c0;
        for (size_t kx = 0; kx < t.kw; ++kx) {
            VF v[V];
            for (size_t j = 0; j < V; ++j)
                v[j] = LoadTap<SW, kEdge>(d, s + kx * t.dw + j * N * SW, m[kx]);
            for (size_t r = 0; r < R; ++r) {
                if (ky[r] < 0)
                    continue;
                const VF wv = hn::Set(d, w[static_cast<size_t>(ky[r]) * t.kw + kx]);
                for (size_t j = 0; j < V; ++j)
                    acc[r][j] = hn::MulAdd(wv, v[j], acc[r][j]);
            }
        }
    };
    if constexpr (!std::is_same_v<K, Generic>) {
        Unroll<(R - 1) * K::SH + K::KH>([&](auto I) NM_INLINE {
            constexpr size_t i = decltype(I)::value;
            const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
            if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
                return;
            const float* s = x.data + y * x.row + c0;
            Unroll<K::KW>([&](auto KX) NM_INLINE {
                constexpr size_t kx = decltype(KX)::value;
                VF v[V];
                for (size_t j = 0; j < V; ++j)
                    v[j] = LoadTap<SW, kEdge>(d, s + kx * t.dw + j * N * SW, m[kx]);
                Unroll<R>([&](auto RR) NM_INLINE {
                    constexpr size_t r = decltype(RR)::value;
                    if constexpr (i >= r * K::SH && i - r * K::SH < K::KH) {
                        const VF wv = hn::Set(d, w[(i - r * K::SH) * K::KW + kx]);
                        for (size_t j = 0; j < V; ++j)
                            acc[r][j] = hn::MulAdd(wv, v[j], acc[r][j]);
                    }
                });
            });
        });
    } else if constexpr (R == 1) {
        for (size_t k = 0; k < t.kh; ++k) {
            ptrdiff_t y = y0 + static_cast<ptrdiff_t>(k * t.dh);
            int ky[1] = {static_cast<int>(k)};
            if (y >= 0 && y < static_cast<ptrdiff_t>(x.h))
                row(y, ky);
        }
    } else {
        const size_t span = (R - 1) * t.sh + (t.kh - 1) * t.dh + 1;
        for (size_t i = 0; i < span; ++i) {
            ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
            if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
                continue;
            int ky[R];
            bool any = false;
            for (size_t r = 0; r < R; ++r) {
                ky[r] = table->ky[i][r];
                any |= ky[r] >= 0;
            }
            if (any)
                row(y, ky);
        }
    }
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < V; ++j) {
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox0 + j * N;
            const VF v = TapOrder<SW>(acc[r][j]);
            if (kEdge && last < N)
                hn::BlendedStore(v, hn::FirstN(d, last), d, p);
            else
                hn::StoreU(v, d, p);
        }
}

// The vectors along an output row whose tiles are interior: [lo, hi) of ceil(ow / N).
struct Interior {
    size_t lo, hi;
};

template <size_t SW>
Interior interior_of(DF d, const DwSource& x, const DwTaps& t, size_t ow) {
    const size_t N = hn::Lanes(d);
    size_t nvec = (ow + N - 1) / N, lo = nvec, hi = 0;
    for (size_t j = 0; j < nvec; ++j) {
        ptrdiff_t first = static_cast<ptrdiff_t>(j * N * SW) - x.left;
        ptrdiff_t end = first + static_cast<ptrdiff_t>(N * SW + (t.kw - 1) * t.dw);
        if ((j + 1) * N <= ow && first >= 0 && end <= static_cast<ptrdiff_t>(x.w)) {
            lo = std::min(lo, j);
            hi = j + 1;
        }
    }
    return lo < hi ? Interior{lo, hi} : Interior{0, 0};
}

// One band of R output rows from oy0: edge tiles one vector at a time, the interior in tiles of
// up to kMaxVecs vectors.
template <size_t R, size_t SW, class K>
void Band(DF d, const DwSource& x, const DwTaps& t, const TapTable* table, const float* w,
          float* out, ptrdiff_t out_row, size_t oy0, size_t ow, Interior in, bool accumulate) {
    const size_t N = hn::Lanes(d), nvec = (ow + N - 1) / N;
    float* o = out + static_cast<ptrdiff_t>(oy0) * out_row;
    for (size_t j = 0; j < nvec;) {
        if (j < in.lo || j >= in.hi) {
            size_t last = std::min(N, ow - j * N);
            Tile<R, 1, true, SW, K>(d, x, t, table, w, o, out_row, oy0, j * N, last, accumulate);
            ++j;
            continue;
        }
        size_t v = std::min(kMaxVecs, in.hi - j);
        switch (v) {
            case 4:
                if constexpr (kMaxVecs >= 4) {
                    Tile<R, 4, false, SW, K>(d, x, t, table, w, o, out_row, oy0, j * N, N,
                                             accumulate);
                    break;
                }
                [[fallthrough]];
            case 3:
                if constexpr (kMaxVecs >= 3) {
                    Tile<R, 3, false, SW, K>(d, x, t, table, w, o, out_row, oy0, j * N, N,
                                             accumulate);
                    break;
                }
                [[fallthrough]];
            case 2:
                Tile<R, 2, false, SW, K>(d, x, t, table, w, o, out_row, oy0, j * N, N, accumulate);
                break;
            default:
                Tile<R, 1, false, SW, K>(d, x, t, table, w, o, out_row, oy0, j * N, N, accumulate);
                break;
        }
        j += v;
    }
}

template <size_t SW, class K>
void Correlate(const DwSource& x, const DwTaps& t, const float* w, float* out, ptrdiff_t out_row,
               size_t oh, size_t ow, bool accumulate) {
    const DF d;
    const Interior in = interior_of<SW>(d, x, t, ow);
    // Bands of several rows where the tap table covers them; single rows otherwise.
    TapTable table;
    const size_t span = (kMaxRows - 1) * t.sh + (t.kh - 1) * t.dh + 1;
    const bool banded = !std::is_same_v<K, Generic> || span <= kMaxSpan;
    if (std::is_same_v<K, Generic> && banded)
        for (size_t i = 0; i < span; ++i)
            for (size_t r = 0; r < kMaxRows; ++r) {
                ptrdiff_t q = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(r * t.sh);
                bool hit = q >= 0 && static_cast<size_t>(q) % t.dh == 0 &&
                           static_cast<size_t>(q) / t.dh < t.kh;
                table.ky[i][r] = static_cast<int8_t>(hit ? q / static_cast<ptrdiff_t>(t.dh) : -1);
            }
    size_t oy = 0;
    if (banded) {
        for (; oy + 4 <= oh; oy += 4) {
            prefetch_next_rows(x, static_cast<ptrdiff_t>(oy * x.h / oh),
                               static_cast<ptrdiff_t>((oy + 4) * x.h / oh));
            Band<4, SW, K>(d, x, t, &table, w, out, out_row, oy, ow, in, accumulate);
        }
        for (; oy + 2 <= oh; oy += 2) {
            prefetch_next_rows(x, static_cast<ptrdiff_t>(oy * x.h / oh),
                               static_cast<ptrdiff_t>((oy + 2) * x.h / oh));
            Band<2, SW, K>(d, x, t, &table, w, out, out_row, oy, ow, in, accumulate);
        }
    }
    for (; oy < oh; ++oy) {
        prefetch_next_rows(x, static_cast<ptrdiff_t>(oy * x.h / oh),
                           static_cast<ptrdiff_t>((oy + 1) * x.h / oh));
        Band<1, SW, K>(d, x, t, nullptr, w, out, out_row, oy, ow, in, accumulate);
    }
}

template <size_t SW>
void CorrelateTaps(const DwSource& x, const DwTaps& t, const float* w, float* out,
                   ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    auto is = [&](size_t kh, size_t kw, size_t sh) {
        return t.kh == kh && t.kw == kw && t.sh == sh && t.dh == 1;
    };
    if (is(3, 3, 1)) {
        // 3x3 with one column of left padding on AVX-512, in cache: the aligned copy's loop,
        // whose taps split no cache lines (the stride-2 one's need no permute per tap either).
        if (SW == 1 && t.dw == 1 && x.cached &&
            dw_correlate3x3_avx512(1, x, w, out, out_row, oh, ow, accumulate))
            return;
        if (SW == 1 && t.dw == 1 && x.cached &&
            dw_aligned_correlate3x3(1, x, w, out, out_row, oh, ow, accumulate))
            return;
        Correlate<SW, Fixed<3, 3, 1>>(x, t, w, out, out_row, oh, ow, accumulate);
    } else if (is(3, 3, 2)) {
        // In place, cached or not: on AVX-512 with one column of left padding from loads at
        // the rows' starts, elsewhere (and on AVX2) each tap's columns selected within 128-bit
        // blocks.
        if (SW == 2 && t.dw == 1 &&
            (dw_correlate3x3_avx512(2, x, w, out, out_row, oh, ow, accumulate) ||
             dw_s2_correlate3x3(x, w, out, out_row, oh, ow, accumulate)))
            return;
        Correlate<SW, Fixed<3, 3, 2>>(x, t, w, out, out_row, oh, ow, accumulate);
    } else if (is(5, 5, 1))
        Correlate<SW, Fixed<5, 5, 1>>(x, t, w, out, out_row, oh, ow, accumulate);
    else if (is(5, 5, 2))
        Correlate<SW, Fixed<5, 5, 2>>(x, t, w, out, out_row, oh, ow, accumulate);
    else
        Correlate<SW, Generic>(x, t, w, out, out_row, oh, ow, accumulate);
}

bool DirectSupported(const DwTaps& t) {
    return (t.sw == 1 || t.sw == 2) && t.kw <= kMaxKw;
}

void DirectCorrelate(const DwSource& x, const DwTaps& t, const float* w, float* out,
                     ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    if (t.sw == 1)
        CorrelateTaps<1>(x, t, w, out, out_row, oh, ow, accumulate);
    else
        CorrelateTaps<2>(x, t, w, out, out_row, oh, ow, accumulate);
}

// The filter's gradient from one vector of diff's columns (from ox0, `last` of them in the
// row), all rows, into `total`: bands of R rows load each row of X once for every (diff row,
// tap) pair it meets, and rows of even and odd r add into separate accumulator sets where
// registers allow, which halves the chains of dependent additions. The accumulators are local
// to this function, which keeps them in registers.
template <bool kEdge, size_t SW, size_t KH, size_t KW, size_t SH>
HWY_INLINE void GradColumn(DF d, const DwSource& x, const DwTaps& t, const float* diff,
                           ptrdiff_t diff_row, size_t oh, size_t ox0, size_t last, VF* total) {
    constexpr size_t kRegs = HWY_TARGET <= HWY_AVX3 ? 32 : 16;
    constexpr size_t S = 2 * KH * KW + 4 + 2 <= kRegs ? 2 : 1;
    const ptrdiff_t c0 = static_cast<ptrdiff_t>(ox0 * SW) - x.left;
    MF m[kMaxKw][SW];
    if constexpr (kEdge)
        EdgeMasks<SW>(d, x, t, c0, m);
    // Lanes past the row are zero in diff and in X (an infinity there would give NaN); both in
    // the taps' lane order.
    MF out_lanes = hn::FirstN(d, last);
#if HWY_TARGET == HWY_AVX2
    if constexpr (SW == 2) {
        const hn::RebindToSigned<DF> di;
        out_lanes = hn::RebindMask(d, hn::Lt(hn::Load(di, blocks::kBlockLane),
                                             hn::Set(di, static_cast<int32_t>(last))));
    }
#endif
    VF acc[S][KH * KW];
    for (size_t i = 0; i < S; ++i)
        for (size_t k = 0; k < KH * KW; ++k)
            acc[i][k] = hn::Zero(d);
    auto band = [&](auto RC, size_t oy0) NM_INLINE {
        constexpr size_t R = decltype(RC)::value;
        VF dv[R];
        for (size_t r = 0; r < R; ++r) {
            const float* dr = diff + static_cast<ptrdiff_t>(oy0 + r) * diff_row + ox0;
            dv[r] = TapOrder<SW>(kEdge ? hn::MaskedLoad(hn::FirstN(d, last), d, dr)
                                       : hn::LoadU(d, dr));
        }
        const ptrdiff_t y0 = static_cast<ptrdiff_t>(oy0 * SH) - x.top;
        // With R == 1, input row i is tap i (dh rows apart); bands have dh == 1.
        Unroll<(R - 1) * SH + KH>([&](auto I) NM_INLINE {
            constexpr size_t i = decltype(I)::value;
            const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i * t.dh);
            if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
                return;
            const float* s = x.data + y * x.row + c0;
            Unroll<KW>([&](auto KX) NM_INLINE {
                constexpr size_t kx = decltype(KX)::value;
                VF xv = LoadTap<SW, kEdge>(d, s + kx * t.dw, m[kx]);
                if constexpr (kEdge)
                    xv = hn::IfThenElseZero(out_lanes, xv);
                Unroll<R>([&](auto RR) NM_INLINE {
                    constexpr size_t r = decltype(RR)::value;
                    if constexpr (i >= r * SH && i - r * SH < KH) {
                        constexpr size_t k = (i - r * SH) * KW + kx;
                        acc[r % S][k] = hn::MulAdd(dv[r], xv, acc[r % S][k]);
                    }
                });
            });
        });
    };
    size_t oy = 0;
    if (t.dh == 1)
        for (; oy + 4 <= oh; oy += 4)
            band(std::integral_constant<size_t, 4>{}, oy);
    for (; oy < oh; ++oy)
        band(std::integral_constant<size_t, 1>{}, oy);
    for (size_t k = 0; k < KH * KW; ++k) {
        total[k] = hn::Add(total[k], acc[0][k]);
        if constexpr (S > 1)
            total[k] = hn::Add(total[k], acc[1][k]);
    }
}

// The filter's gradient of KH x KW taps with a row stride of SH.
template <size_t KH, size_t KW, size_t SH, size_t SW>
void FilterGrad(const DwSource& x, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                size_t oh, size_t ow, double* g) {
    const DF d;
    const size_t N = hn::Lanes(d), nvec = (ow + N - 1) / N;
    const Interior in = interior_of<SW>(d, x, t, ow);
    VF total[KH * KW];
    for (size_t k = 0; k < KH * KW; ++k)
        total[k] = hn::Zero(d);
    for (size_t j = 0; j < nvec; ++j) {
        size_t last = std::min(N, ow - j * N);
        if (j < in.lo || j >= in.hi)
            GradColumn<true, SW, KH, KW, SH>(d, x, t, diff, diff_row, oh, j * N, last, total);
        else
            GradColumn<false, SW, KH, KW, SH>(d, x, t, diff, diff_row, oh, j * N, N, total);
    }
    for (size_t k = 0; k < KH * KW; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, total[k])));
}

template <size_t KH, size_t KW>
void FilterGradOf(const DwSource& x, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                  size_t oh, size_t ow, double* g) {
    auto run = [&](auto sh, auto sw) {
        FilterGrad<KH, KW, decltype(sh)::value, decltype(sw)::value>(x, t, diff, diff_row, oh, ow,
                                                                     g);
    };
    using One = std::integral_constant<size_t, 1>;
    using Two = std::integral_constant<size_t, 2>;
    if (t.sh == 1)
        t.sw == 1 ? run(One{}, One{}) : run(One{}, Two{});
    else
        t.sw == 1 ? run(Two{}, One{}) : run(Two{}, Two{});
}

bool DirectFilterGradSupported(const DwTaps& t) {
    if ((t.sw != 1 && t.sw != 2) || (t.sh != 1 && t.sh != 2))
        return false;
    if (t.kh == t.kw && (t.kh == 1 || t.kh == 3))
        return true;
    return HWY_TARGET <= HWY_AVX3 && t.kh == 5 && t.kw == 5;
}

void DirectFilterGrad(const DwSource& x, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                      size_t oh, size_t ow, double* g) {
    if (t.kh == 1)
        return FilterGradOf<1, 1>(x, t, diff, diff_row, oh, ow, g);
    // On AVX2, bands across whole rows: the column walk below reads each plane's rows once per
    // vector column, which from memory measured 2x slower (7.2 against 3.4 ms, 64 x 56 x 56,
    // batch 32), while in cache (batch 1, stride 1) it is 20% faster (0.080 against 0.099 ms).
    // The same on AVX-512 at stride 2 from memory (the column walk 6.8-7.1 ms, the bands 3.7-4.0,
    // 128 x 56 x 56, batch 32, one thread).
    if (t.kh == 3 && t.sh == t.sw && t.dh == 1 && t.dw == 1 && (x.cached || t.sh == 1) &&
        dw_filter_grad3x3_avx512(t.sh, x, diff, diff_row, oh, ow, g))
        return;
    if (t.kh == 3 && t.sh == t.sw && t.dh == 1 && t.dw == 1 && (t.sh == 2 || !x.cached) &&
        dw_filter_grad3x3_avx2(t.sh, x, diff, diff_row, oh, ow, g))
        return;
    if (t.kh == 3)
        return FilterGradOf<3, 3>(x, t, diff, diff_row, oh, ow, g);
#if HWY_TARGET <= HWY_AVX3
    FilterGradOf<5, 5>(x, t, diff, diff_row, oh, ow, g);
#endif
}

#undef NM_INLINE

#else  // targets without masked loads that skip memory: depthwise_hwy.h's loops

bool DirectSupported(const DwTaps&) {
    return false;
}

void DirectCorrelate(const DwSource&, const DwTaps&, const float*, float*, ptrdiff_t, size_t,
                     size_t, bool) {}

bool DirectFilterGradSupported(const DwTaps&) {
    return false;
}

void DirectFilterGrad(const DwSource&, const DwTaps&, const float*, ptrdiff_t, size_t, size_t,
                      double*) {}

#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(DirectSupported);
HWY_EXPORT(DirectCorrelate);
HWY_EXPORT(DirectFilterGradSupported);
HWY_EXPORT(DirectFilterGrad);

bool dw_direct_supported(const DwTaps& t) {
    return HWY_DYNAMIC_DISPATCH(DirectSupported)(t);
}

void dw_direct_correlate(const DwSource& x, const DwTaps& t, const float* w, float* out,
                         ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    HWY_DYNAMIC_DISPATCH(DirectCorrelate)(x, t, w, out, out_row, oh, ow, accumulate);
}

bool dw_direct_filter_grad_supported(const DwTaps& t) {
    return HWY_DYNAMIC_DISPATCH(DirectFilterGradSupported)(t);
}

void dw_direct_filter_grad(const DwSource& x, const DwTaps& t, const float* diff,
                           ptrdiff_t diff_row, size_t oh, size_t ow, double* g) {
    HWY_DYNAMIC_DISPATCH(DirectFilterGrad)(x, t, diff, diff_row, oh, ow, g);
}

}  // namespace neomeg::dnn::x86
#endif
