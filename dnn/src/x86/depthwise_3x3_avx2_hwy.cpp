// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. The AVX2 target has
// all its kernels; AVX-512 takes only the stride-2 correlation, for the windows that
// depthwise_3x3_avx512_hwy.cpp's loops decline (other than one column of left padding: 3x3
// stride 2 in cache 590 -> 440 ns per 56x56 plane against depthwise_direct_hwy.cpp's ConcatEven
// taps), and keeps depthwise_direct_hwy.cpp's filter gradient (these bands, which sum into an
// array of the caller's, kept the sums on the stack there: 1750 against 970 ns, stride 1).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_3x3_avx2_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstddef>
#include <utility>

#include "src/x86/depthwise_3x3_avx2_hwy.h"
// clang-format off: after highway.h
#include "src/x86/depthwise_blocks_hwy-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;
constexpr size_t N = HWY_TARGET == HWY_AVX3 ? 16 : 8;
constexpr size_t kRows = 4;

#define NM_INLINE __attribute__((always_inline))

using blocks::EvenInBlocks;
using blocks::OddInBlocks;
using blocks::ToLanes;
using blocks::ToMemory;

// Lanes l whose column c + l lies in [0, end).
HWY_INLINE MF ColumnsIn(DF d, ptrdiff_t c, ptrdiff_t end) {
    const auto n = static_cast<ptrdiff_t>(N);
    const ptrdiff_t lo = std::clamp<ptrdiff_t>(-c, 0, n), hi = std::clamp<ptrdiff_t>(end - c, 0, n);
    return hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                      hn::FirstN(d, static_cast<size_t>(hi)));
}

// Output vector j's three taps along a row read two pairs of vectors, from c0 = 16j - left
// (columns c0 + 2l: tap 0, c0 + 2l + 1: tap 1) and from c0 + 2 (tap 2). Where a load leaves the
// plane's columns, or reaches columns of outputs past the row (kept zero, so that the filter
// gradient's zero diff lanes meet no infinity), its lanes are masked: m[h] for the loads at
// c0, c0 + 8, c0 + 2, c0 + 10.
struct Column {
    MF m[4];
    bool edge;
};

// With a stride of 1 (the filter gradient), tap kx is one load from c0 + kx, c0 = 8j - left,
// masked by m[kx].
template <size_t S>
class Columns {
public:
    static constexpr size_t kMax = 64;  // vectors per output row (512 outputs)

    Columns(const DwSource& x, size_t ow) : m_nvec((ow + N - 1) / N) {
        const DF d;
        const auto w = static_cast<ptrdiff_t>(x.w), sow = static_cast<ptrdiff_t>(S * ow);
        const auto n = static_cast<ptrdiff_t>(N);
        for (size_t j = 0; j < m_nvec && j < kMax; ++j) {
            const ptrdiff_t c0 = static_cast<ptrdiff_t>(S * N * j) - x.left;
            Column& c = m_col[j];
            c.edge = c0 < 0;
            // The load from c0 + a, whose lanes past the output row start at column sow - left + b.
            auto load = [&](size_t h, ptrdiff_t a, ptrdiff_t b) {
                const ptrdiff_t end = std::min(w, sow - x.left + b);
                c.m[h] = ColumnsIn(d, c0 + a, end);
                c.edge |= c0 + a + n > end;
            };
            if constexpr (S == 2) {
                load(0, 0, 0);
                load(1, n, 0);
                load(2, 2, 2);
                load(3, n + 2, 2);
            } else {
                for (ptrdiff_t kx = 0; kx < 3; ++kx)
                    load(static_cast<size_t>(kx), kx, kx);
            }
        }
    }
    bool fits() const { return m_nvec <= kMax; }
    size_t nvec() const { return m_nvec; }
    const Column& operator[](size_t j) const { return m_col[j]; }

private:
    size_t m_nvec;
    Column m_col[kMax];
};

// The three taps (kLane order for a stride of 2) of row s for output vector j (columns from c0).
template <size_t S, bool kEdge>
HWY_INLINE void Taps(DF d, const float* s, ptrdiff_t c0, const Column& col, VF (&t)[3]) {
    auto ld = [&](size_t h, ptrdiff_t c) NM_INLINE {
        if constexpr (kEdge)
            return hn::MaskedLoad(col.m[h], d, s + c);
        else
            return hn::LoadU(d, s + c);
    };
    if constexpr (S == 1) {
        for (size_t kx = 0; kx < 3; ++kx)
            t[kx] = ld(kx, c0 + static_cast<ptrdiff_t>(kx));
        return;
    }
    const auto n = static_cast<ptrdiff_t>(N);
    const VF a = ld(0, c0), b = ld(1, c0 + n);
    t[0] = EvenInBlocks(a, b);
    t[1] = OddInBlocks(a, b);
    t[2] = EvenInBlocks(ld(2, c0 + 2), ld(3, c0 + n + 2));
}

// R output rows from oy0 by V vectors from j0, in kLane order until stored.
template <size_t R, size_t V, bool kEdge>
HWY_INLINE void Tile(const DwSource& x, const Columns<2>& cols, const float* wt, float* o,
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
                acc[r][v] = ToLanes(hn::LoadU(d, p));
            else
                acc[r][v] = ToLanes(hn::MaskedLoad(hn::FirstN(d, ow - ox), d, p));
        }
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(2 * oy0) - x.top;
    Unroll<2 * (R - 1) + 3>([&](auto I) NM_INLINE {
        constexpr size_t i = decltype(I)::value;
        const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
        if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
            return;
        const float* s = x.data + y * x.row;
        for (size_t v = 0; v < V; ++v) {
            const size_t j = j0 + v;
            VF t[3];
            Taps<2, kEdge>(d, s, static_cast<ptrdiff_t>(2 * N * j) - x.left, cols[j], t);
            Unroll<R>([&](auto RR) NM_INLINE {
                constexpr size_t r = decltype(RR)::value;
                if constexpr (i >= 2 * r && i - 2 * r < 3) {
                    constexpr size_t ky = i - 2 * r;
                    acc[r][v] = hn::MulAdd(w[ky * 3], t[0], acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 1], t[1], acc[r][v]);
                    acc[r][v] = hn::MulAdd(w[ky * 3 + 2], t[2], acc[r][v]);
                }
            });
        }
    });
    for (size_t r = 0; r < R; ++r)
        for (size_t v = 0; v < V; ++v) {
            const size_t ox = (j0 + v) * N;
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + ox;
            const VF out = ToMemory(acc[r][v]);
            if (ox + N <= ow)
                hn::StoreU(out, d, p);
            else
                hn::BlendedStore(out, hn::FirstN(d, ow - ox), d, p);
        }
}

template <size_t R>
HWY_INLINE void Band(const DwSource& x, const Columns<2>& cols, const float* w, float* out,
                     ptrdiff_t out_row, size_t oy0, size_t ow, bool accumulate) {
    float* o = out + static_cast<ptrdiff_t>(oy0) * out_row;
    for (size_t j = 0; j < cols.nvec();) {
        if (cols[j].edge) {
            Tile<R, 1, true>(x, cols, w, o, out_row, oy0, j, ow, accumulate);
            ++j;
        } else if (j + 1 < cols.nvec() && !cols[j + 1].edge) {
            Tile<R, 2, false>(x, cols, w, o, out_row, oy0, j, ow, accumulate);
            j += 2;
        } else {
            Tile<R, 1, false>(x, cols, w, o, out_row, oy0, j, ow, accumulate);
            ++j;
        }
    }
}

bool Correlate(const DwSource& x, const float* wt, float* out, ptrdiff_t out_row, size_t oh,
               size_t ow, bool accumulate) {
    const Columns<2> cols(x, ow);
    if (!cols.fits())
        return false;
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows) {
        prefetch_next_rows(x, 2 * static_cast<ptrdiff_t>(oy) - x.top,
                           2 * static_cast<ptrdiff_t>(oy + kRows) - x.top);
        Band<kRows>(x, cols, wt, out, out_row, oy, ow, accumulate);
    }
    for (; oy < oh; ++oy) {
        prefetch_next_rows(x, 2 * static_cast<ptrdiff_t>(oy) - x.top,
                           2 * static_cast<ptrdiff_t>(oy + 1) - x.top + 1);
        Band<1>(x, cols, wt, out, out_row, oy, ow, accumulate);
    }
    return true;
}

// Diff's rows oy0 .. oy0 + R - 1 at vector j against their taps, into the 9 sums (kLane order,
// which their sums over lanes do not see).
template <size_t S, size_t R, bool kEdge>
HWY_INLINE void GradTile(DF d, const DwSource& x, const Columns<S>& cols, const float* diff,
                         ptrdiff_t diff_row, size_t oy0, size_t j, size_t ow, VF (&acc)[9]) {
    const size_t ox = j * N;
    VF dv[R];
    for (size_t r = 0; r < R; ++r) {
        const float* p = diff + static_cast<ptrdiff_t>(oy0 + r) * diff_row + ox;
        dv[r] = ox + N <= ow ? hn::LoadU(d, p) : hn::MaskedLoad(hn::FirstN(d, ow - ox), d, p);
        if constexpr (S == 2)
            dv[r] = ToLanes(dv[r]);
    }
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(S * oy0) - x.top;
    Unroll<S*(R - 1) + 3>([&](auto I) NM_INLINE {
        constexpr size_t i = decltype(I)::value;
        const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
        if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
            return;
        VF t[3];
        Taps<S, kEdge>(d, x.data + y * x.row, static_cast<ptrdiff_t>(S * N * j) - x.left, cols[j],
                       t);
        Unroll<R>([&](auto RR) NM_INLINE {
            constexpr size_t r = decltype(RR)::value;
            if constexpr (i >= S * r && i - S * r < 3) {
                constexpr size_t k = (i - S * r) * 3;
                acc[k] = hn::MulAdd(dv[r], t[0], acc[k]);
                acc[k + 1] = hn::MulAdd(dv[r], t[1], acc[k + 1]);
                acc[k + 2] = hn::MulAdd(dv[r], t[2], acc[k + 2]);
            }
        });
    });
}

template <size_t S, size_t R>
HWY_INLINE void GradBand(DF d, const DwSource& x, const Columns<S>& cols, const float* diff,
                         ptrdiff_t diff_row, size_t oy0, size_t ow, VF (&acc)[9]) {
    for (size_t j = 0; j < cols.nvec(); ++j) {
        if (cols[j].edge)
            GradTile<S, R, true>(d, x, cols, diff, diff_row, oy0, j, ow, acc);
        else
            GradTile<S, R, false>(d, x, cols, diff, diff_row, oy0, j, ow, acc);
    }
}

template <size_t S>
bool FilterGrad(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                double* g) {
    const DF d;
    const Columns<S> cols(x, ow);
    if (!cols.fits())
        return false;
    VF acc[9];
    for (size_t k = 0; k < 9; ++k)
        acc[k] = hn::Zero(d);
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows)
        GradBand<S, kRows>(d, x, cols, diff, diff_row, oy, ow, acc);
    for (; oy < oh; ++oy)
        GradBand<S, 1>(d, x, cols, diff, diff_row, oy, ow, acc);
    for (size_t k = 0; k < 9; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc[k])));
    return true;
}

// The stride-2 filter gradient sums tap 2 as diff shifted by one output against tap 0's
// columns: tap 2 of output o reads the column that tap 0 of output o + 1 reads. An input row's
// vector then costs two loads and two shuffles (taps 0 and 1) rather than four and three, and
// each diff row one more load (the shifted one), whatever the number of input rows it meets.
// Vector j's lanes are outputs 8j + kBlockLane[l], up to o' = ow for the shifted sum (one vector
// more where N divides ow). Its masks: `in`, the loads from c0 = 16j - left and c0 + 8, to the
// plane's columns up to 2 ow - left (tap 0 of o' = ow; tap 1's lanes end before it); `tap0`
// and `tap2`, tap 0's lanes that meet diff (o < ow) and the shifted diff (o' >= 1), so that a
// lane whose diff is zero reads no column (an infinity there would give NaN); `dv` and `dvs`,
// the diff lanes loaded (memory order): o < ow, and 1 <= o' <= ow.
struct S2GradColumn {
    MF in[2], tap0, tap2, dv, dvs;
    bool edge;
};

template <size_t R, bool kEdge>
HWY_INLINE void S2GradTile(DF d, const DwSource& x, const S2GradColumn& col, const float* diff,
                           ptrdiff_t diff_row, size_t oy0, size_t j, VF (&acc)[9]) {
    VF dv[R], dvs[R];
    for (size_t r = 0; r < R; ++r) {
        const float* p = diff + static_cast<ptrdiff_t>(oy0 + r) * diff_row + j * N;
        dv[r] = ToLanes(kEdge ? hn::MaskedLoad(col.dv, d, p) : hn::LoadU(d, p));
        dvs[r] = ToLanes(kEdge ? hn::MaskedLoad(col.dvs, d, p - 1) : hn::LoadU(d, p - 1));
    }
    const ptrdiff_t y0 = static_cast<ptrdiff_t>(2 * oy0) - x.top;
    const ptrdiff_t c0 = static_cast<ptrdiff_t>(2 * N * j) - x.left;
    Unroll<2 * (R - 1) + 3>([&](auto I) NM_INLINE {
        constexpr size_t i = decltype(I)::value;
        const ptrdiff_t y = y0 + static_cast<ptrdiff_t>(i);
        if (y < 0 || y >= static_cast<ptrdiff_t>(x.h))
            return;
        const float* s = x.data + y * x.row + c0;
        const VF a = kEdge ? hn::MaskedLoad(col.in[0], d, s) : hn::LoadU(d, s);
        const VF b = kEdge ? hn::MaskedLoad(col.in[1], d, s + N) : hn::LoadU(d, s + N);
        const VF t0 = EvenInBlocks(a, b), t1 = OddInBlocks(a, b);
        const VF t0a = kEdge ? hn::IfThenElseZero(col.tap0, t0) : t0;
        const VF t0c = kEdge ? hn::IfThenElseZero(col.tap2, t0) : t0;
        Unroll<R>([&](auto RR) NM_INLINE {
            constexpr size_t r = decltype(RR)::value;
            if constexpr (i >= 2 * r && i - 2 * r < 3) {
                constexpr size_t k = (i - 2 * r) * 3;
                acc[k] = hn::MulAdd(dv[r], t0a, acc[k]);
                acc[k + 1] = hn::MulAdd(dv[r], t1, acc[k + 1]);
                acc[k + 2] = hn::MulAdd(dvs[r], t0c, acc[k + 2]);
            }
        });
    });
}

template <size_t R>
HWY_INLINE void S2GradBand(DF d, const DwSource& x, const S2GradColumn* cols, size_t nvec,
                           const float* diff, ptrdiff_t diff_row, size_t oy0, VF (&acc)[9]) {
    for (size_t j = 0; j < nvec; ++j) {
        if (cols[j].edge)
            S2GradTile<R, true>(d, x, cols[j], diff, diff_row, oy0, j, acc);
        else
            S2GradTile<R, false>(d, x, cols[j], diff, diff_row, oy0, j, acc);
    }
}

bool S2FilterGrad(const DwSource& x, const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow,
                  double* g) {
    constexpr size_t kMax = 64;
    const size_t nvec = ow / N + 1;
    if (nvec > kMax)
        return false;
    const DF d;
    const hn::RebindToSigned<DF> di;
    S2GradColumn cols[kMax];
    const auto sow = static_cast<ptrdiff_t>(ow), n = static_cast<ptrdiff_t>(N);
    const ptrdiff_t end = std::min<ptrdiff_t>(static_cast<ptrdiff_t>(x.w), 2 * sow - x.left + 1);
    for (size_t j = 0; j < nvec; ++j) {
        S2GradColumn& c = cols[j];
        const auto o = static_cast<ptrdiff_t>(N * j);
        const ptrdiff_t c0 = 2 * o - x.left;
        c.in[0] = ColumnsIn(d, c0, end);
        c.in[1] = ColumnsIn(d, c0 + n, end);
        const auto lanes =
                hn::Add(hn::Set(di, static_cast<int32_t>(o)), hn::Load(di, blocks::kBlockLane));
        c.tap0 = hn::RebindMask(d, hn::Lt(lanes, hn::Set(di, static_cast<int32_t>(ow))));
        c.tap2 = hn::RebindMask(d, hn::Gt(lanes, hn::Zero(di)));
        c.dv = hn::FirstN(d, static_cast<size_t>(std::clamp<ptrdiff_t>(sow - o, 0, n)));
        c.dvs = hn::AndNot(
                hn::FirstN(d, j == 0 ? 1 : 0),
                hn::FirstN(d, static_cast<size_t>(std::clamp<ptrdiff_t>(sow + 1 - o, 0, n))));
        c.edge = j == 0 || o + n > sow || c0 < 0 || c0 + 2 * n > end;
    }
    VF acc[9];
    for (size_t k = 0; k < 9; ++k)
        acc[k] = hn::Zero(d);
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows)
        S2GradBand<kRows>(d, x, cols, nvec, diff, diff_row, oy, acc);
    for (; oy < oh; ++oy)
        S2GradBand<1>(d, x, cols, nvec, diff, diff_row, oy, acc);
    for (size_t k = 0; k < 9; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc[k])));
    return true;
}

#undef NM_INLINE

bool S2Correlate3x3(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                    size_t ow, bool accumulate) {
    if (oh == 0 || ow == 0)
        return true;
    return Correlate(x, w, out, out_row, oh, ow, accumulate);
}

bool FilterGrad3x3(size_t stride, const DwSource& x, const float* diff, ptrdiff_t diff_row,
                   size_t oh, size_t ow, double* g) {
    if (HWY_TARGET != HWY_AVX2 && stride != 2)
        return false;
    if (oh == 0 || ow == 0)
        return true;
    if (stride == 1)
        return FilterGrad<1>(x, diff, diff_row, oh, ow, g);
    return stride == 2 && S2FilterGrad(x, diff, diff_row, oh, ow, g);
}
#else
bool S2Correlate3x3(const DwSource&, const float*, float*, ptrdiff_t, size_t, size_t, bool) {
    return false;
}

bool FilterGrad3x3(size_t, const DwSource&, const float*, ptrdiff_t, size_t, size_t, double*) {
    return false;
}
#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(S2Correlate3x3);
HWY_EXPORT(FilterGrad3x3);

bool dw_s2_correlate3x3(const DwSource& x, const float* w, float* out, ptrdiff_t out_row, size_t oh,
                        size_t ow, bool accumulate) {
    return HWY_DYNAMIC_DISPATCH(S2Correlate3x3)(x, w, out, out_row, oh, ow, accumulate);
}

bool dw_filter_grad3x3_avx2(size_t stride, const DwSource& x, const float* diff, ptrdiff_t diff_row,
                            size_t oh, size_t ow, double* g) {
    return HWY_DYNAMIC_DISPATCH(FilterGrad3x3)(stride, x, diff, diff_row, oh, ow, g);
}

}  // namespace neomeg::dnn::x86
#endif
