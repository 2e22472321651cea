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

// The maximum of one input row's taps for a block, by x86's maxps (which returns its second
// operand, the earlier value, on ties, as naive keeps the first maximum), and the lanes where a
// tap is a NaN (maxps drops those).
template <size_t SW, class T>
HWY_INLINE VF RowMax(DF d, const T* row, size_t kw, ptrdiff_t c0, bool inside, const MF* m,
                     MF& nan) {
    const size_t N = hn::Lanes(d);
    const VF lowest = hn::Set(d, kLowest);
    auto load = [&](const T* p, size_t i) {
        return inside ? LoadAs(d, p) : LoadMaskedAs(d, p, m[i]);
    };
    VF acc = lowest;
    for (size_t kx = 0; kx < kw; ++kx) {
        const T* p = row + c0 + static_cast<ptrdiff_t>(kx);
        VF v;
        if constexpr (SW == 1)
            v = load(p, kx);
        else
            v = hn::ConcatEven(d, load(p + N, 2 * kx + 1), load(p, 2 * kx));
        nan = hn::Or(nan, hn::IsNaN(v));
        acc = hn::Max(v, acc);
    }
    return acc;
}

// Windows without depth (kd == 1): each input row's maximum over the window's columns once, then
// each output row the maximum of its rows' (3x3 windows of stride 2 share every other row). A
// block whose rows hold a NaN is recomputed by RowBlock, which keeps naive's rule; NaN-free data
// pays for the check only.
template <size_t SW, class T>
void SeparableRows(DF d, const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds,
                   const PoolDims& g, size_t q0, ptrdiff_t c0, bool inside, const MF* m,
                   float* hm) {
    const size_t N = hn::Lanes(d), kw = g.k[2];
    const VF lowest = hn::Set(d, kLowest);
    for (size_t z = 0; z < g.out[0]; ++z) {
        const T* plane = src + static_cast<ptrdiff_t>(z) * ss[0];
        MF nan = hn::FirstN(d, 0);
        for (size_t y = 0; y < g.in[1]; ++y)
            hn::StoreU(RowMax<SW>(d, plane + static_cast<ptrdiff_t>(y) * ss[1], kw, c0, inside, m,
                                  nan),
                       d, hm + y * N);
        const bool exact = !hn::AllFalse(d, nan);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            T* o = dst + static_cast<ptrdiff_t>(z) * ds[0] + static_cast<ptrdiff_t>(oy) * ds[1] +
                   static_cast<ptrdiff_t>(q0);
            VF acc = lowest;
            if (exact) {
                const T* rows[64];
                size_t nrows = 0;
                for (size_t ky = sy.first; ky < sy.end; ++ky)
                    rows[nrows++] = plane + (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
                acc = RowBlock<SW>(d, rows, nrows, kw, c0, inside, m);
            } else {
                for (size_t ky = sy.first; ky < sy.end; ++ky)
                    acc = hn::Max(hn::LoadU(d, hm + static_cast<size_t>(
                                                            sy.start + static_cast<ptrdiff_t>(ky)) *
                                                               N),
                                  acc);
            }
            StoreNAs(acc, d, o, g.out[2] - q0);
        }
    }
}

// Each thread's buffer of row maxima, kept between calls.
inline float* RowMaxBuffer(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n)
        buf.resize(n);
    return buf.data();
}

// The vector loop of MaxPoolRows: block by block along W (each block's masks made once), every
// output row of the plane.
template <size_t SW, class T>
void RowsInVectors(DF d, const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds,
                   const PoolDims& g) {
    const size_t N = hn::Lanes(d), w = g.in[2], kw = g.k[2];
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
        if (g.k[0] == 1 && g.s[0] == 1 && g.p[0] == 0 && g.k[1] <= 64) {
            SeparableRows<SW>(d, src, ss, dst, ds, g, q0, c0, inside, m, RowMaxBuffer(g.in[1] * N));
            continue;
        }
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

template <class T>
void LanesOf(const T* src, const ptrdiff_t* ss, T* dst, const ptrdiff_t* ds, size_t lanes,
             const PoolDims& g) {
    const DF d;
    const size_t N = hn::Lanes(d);
    for (size_t oz = 0; oz < g.out[0]; ++oz) {
        const Span sz = SpanOf(g, 0, oz);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            for (size_t ox = 0; ox < g.out[2]; ++ox) {
                const Span sx = SpanOf(g, 2, ox);
                T* o = dst + static_cast<ptrdiff_t>(oz) * ds[0] +
                       static_cast<ptrdiff_t>(oy) * ds[1] + static_cast<ptrdiff_t>(ox) * ds[2];
                for (size_t l0 = 0; l0 < lanes; l0 += N) {
                    const size_t n = std::min(N, lanes - l0);
                    // The window's taps in naive's order; `exact` keeps naive's rule, otherwise
                    // x86's maxps (the earlier value on ties, NaNs dropped but flagged in nan).
                    auto window = [&](bool exact, MF& nan) {
                        VF acc = hn::Set(d, kLowest);
                        for (size_t kz = sz.first; kz < sz.end; ++kz)
                            for (size_t ky = sy.first; ky < sy.end; ++ky) {
                                const T* row = src +
                                               (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                               (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1] +
                                               static_cast<ptrdiff_t>(l0);
                                for (size_t kx = sx.first; kx < sx.end; ++kx) {
                                    const T* p =
                                            row + (sx.start + static_cast<ptrdiff_t>(kx)) * ss[2];
                                    const VF v = n == N ? LoadAs(d, p) : LoadFirstAs(d, p, n);
                                    if (exact) {
                                        acc = Step(acc, v);
                                    } else {
                                        nan = hn::Or(nan, hn::IsNaN(v));
                                        acc = hn::Max(v, acc);
                                    }
                                }
                            }
                        return acc;
                    };
                    MF nan = hn::FirstN(d, 0);
                    // Other targets' Max need not keep the earlier value: naive's rule there.
                    VF acc = window(HWY_TARGET > HWY_AVX2, nan);
                    if (!hn::AllFalse(d, nan))
                        acc = window(true, nan);
                    StoreNAs(acc, d, o + l0, n);
                }
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

bool AnyNaN(const float* p, size_t n) {
    const DF d;
    const size_t N = hn::Lanes(d);
    size_t i = 0;
    auto bad = hn::Zero(d);
    // x != x only for NaN: accumulate the unordered lanes and test once per block.
    for (; i + 4 * N <= n; i += 4 * N) {
        const VF a = hn::LoadU(d, p + i), b = hn::LoadU(d, p + i + N);
        const VF c = hn::LoadU(d, p + i + 2 * N), e = hn::LoadU(d, p + i + 3 * N);
        bad = hn::Or(bad, hn::VecFromMask(d, hn::Or(hn::Or(hn::IsNaN(a), hn::IsNaN(b)),
                                                    hn::Or(hn::IsNaN(c), hn::IsNaN(e)))));
        if ((i & (64 * N - 1)) == 0 && !hn::AllFalse(d, hn::MaskFromVec(bad)))
            return true;
    }
    if (!hn::AllFalse(d, hn::MaskFromVec(bad)))
        return true;
    for (; i < n; ++i)
        if (std::isnan(p[i]))
            return true;
    return false;
}

// A bfloat16 NaN: all exponent bits and some mantissa bit, so its bits without the sign exceed
// infinity's 0x7F80 (as int16: both are positive).
bool AnyNaNBF16(const uint16_t* p, size_t n) {
    const hn::ScalableTag<int16_t> d;
    const size_t N = hn::Lanes(d);
    const auto* q = reinterpret_cast<const int16_t*>(p);
    const auto magnitude = hn::Set(d, int16_t(0x7FFF)), inf = hn::Set(d, int16_t(0x7F80));
    auto over = [&](size_t i) { return hn::Gt(hn::And(hn::LoadU(d, q + i), magnitude), inf); };
    size_t i = 0;
    for (; i + 4 * N <= n; i += 4 * N) {
        const auto bad =
                hn::Or(hn::Or(over(i), over(i + N)), hn::Or(over(i + 2 * N), over(i + 3 * N)));
        if (!hn::AllFalse(d, bad))
            return true;
    }
    for (; i < n; ++i)
        if ((p[i] & 0x7FFF) > 0x7F80)
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
HWY_EXPORT(AnyNaN);
HWY_EXPORT(AnyNaNBF16);

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

bool any_nan_bf16(const uint16_t* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(AnyNaNBF16)(p, n);
}

bool any_nan(const float* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(AnyNaN)(p, n);
}

}  // namespace neomeg::dnn::x86
#endif
