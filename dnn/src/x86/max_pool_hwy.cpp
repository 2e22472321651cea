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

// n values from p, the lanes past n (and those not in [lo, hi) of the plane's columns, for the
// vector's first column c) -infinity, which never wins. Masked loads touch no masked-off memory
// on AVX2 and AVX-512; other targets copy through a buffer.
HWY_INLINE VF LoadCols(DF d, const float* p, ptrdiff_t c, size_t w) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    const ptrdiff_t lo = std::clamp<ptrdiff_t>(-c, 0, n);
    const ptrdiff_t hi = std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(w) - c, 0, n);
#if HWY_TARGET <= HWY_AVX2
    const MF m = hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                            hn::FirstN(d, static_cast<size_t>(hi)));
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, kLowest));
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    for (ptrdiff_t i = 0; i < n; ++i)
        tmp[i] = i >= lo && i < hi ? p[i] : kLowest;
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
// One output row's N outputs from column q0 (`count` of them), SW the stride along W (1 or 2):
// each tap column's vector is the input's columns q0 * SW + kx - pw + SW * lane.
template <size_t SW>
HWY_INLINE VF RowBlock(DF d, const float* const* rows, size_t nrows, const PoolDims& g, size_t q0) {
    const size_t N = hn::Lanes(d);
    VF acc = hn::Set(d, kLowest);
    const ptrdiff_t c0 = static_cast<ptrdiff_t>(q0 * SW) - static_cast<ptrdiff_t>(g.p[2]);
    const auto w = g.in[2];
    // Unmasked loads read columns c0 .. c0 + kw - 1 + SW * N - 1 (a stride of 2 reads the odd
    // columns too).
    const bool inside = c0 >= 0 && static_cast<size_t>(c0) + g.k[2] + SW * N - 1 <= w;
    for (size_t r = 0; r < nrows; ++r)
        for (size_t kx = 0; kx < g.k[2]; ++kx) {
            const ptrdiff_t c = c0 + static_cast<ptrdiff_t>(kx);
            const float* p = rows[r] + c;
            VF v;
            if constexpr (SW == 1) {
                v = inside ? hn::LoadU(d, p) : LoadCols(d, p, c, w);
            } else if (inside) {
                v = hn::ConcatEven(d, hn::LoadU(d, p + N), hn::LoadU(d, p));
            } else {
                v = hn::ConcatEven(d, LoadCols(d, p + N, c + static_cast<ptrdiff_t>(N), w),
                                   LoadCols(d, p, c, w));
            }
            acc = Step(acc, v);
        }
    return acc;
}

#endif

void MaxPoolRows(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                 const PoolDims& g) {
    const DF d;
    [[maybe_unused]] const size_t N = hn::Lanes(d);
    // The input rows of one output row's windows (up to kd * kh).
    constexpr size_t kMaxRows = 64;
    [[maybe_unused]] const float* rows[kMaxRows];
    // Other targets (no even-lane concatenation, no masked loads) take the scalar loop.
    const bool vec =
            HWY_TARGET <= HWY_AVX2 && (g.s[2] == 1 || g.s[2] == 2) && g.k[0] * g.k[1] <= kMaxRows;
    for (size_t oz = 0; oz < g.out[0]; ++oz) {
        const Span sz = SpanOf(g, 0, oz);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            float* o =
                    dst + static_cast<ptrdiff_t>(oz) * ds[0] + static_cast<ptrdiff_t>(oy) * ds[1];
            size_t nrows = 0;
            for (size_t kz = sz.first; kz < sz.end; ++kz)
                for (size_t ky = sy.first; ky < sy.end; ++ky)
                    if (nrows < kMaxRows)
                        rows[nrows++] = src + (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                        (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
            if (!vec) {
                for (size_t ox = 0; ox < g.out[2]; ++ox) {
                    const Span sx = SpanOf(g, 2, ox);
                    float acc = kLowest;
                    for (size_t kz = sz.first; kz < sz.end; ++kz)
                        for (size_t ky = sy.first; ky < sy.end; ++ky) {
                            const float* row = src +
                                               (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                               (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1];
                            for (size_t kx = sx.first; kx < sx.end; ++kx)
                                acc = StepScalar(acc, row[sx.start + static_cast<ptrdiff_t>(kx)]);
                        }
                    o[ox] = acc;
                }
                continue;
            }
#if HWY_TARGET <= HWY_AVX2
            for (size_t q0 = 0; q0 < g.out[2]; q0 += N) {
                VF acc = g.s[2] == 1 ? RowBlock<1>(d, rows, nrows, g, q0)
                                     : RowBlock<2>(d, rows, nrows, g, q0);
                StoreN(acc, d, o + q0, g.out[2] - q0);
            }
#endif
        }
    }
}

void MaxPoolLanes(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                  size_t lanes, const PoolDims& g) {
    const DF d;
    const size_t N = hn::Lanes(d);
    for (size_t oz = 0; oz < g.out[0]; ++oz) {
        const Span sz = SpanOf(g, 0, oz);
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            for (size_t ox = 0; ox < g.out[2]; ++ox) {
                const Span sx = SpanOf(g, 2, ox);
                float* o = dst + static_cast<ptrdiff_t>(oz) * ds[0] +
                           static_cast<ptrdiff_t>(oy) * ds[1] + static_cast<ptrdiff_t>(ox) * ds[2];
                for (size_t l0 = 0; l0 < lanes; l0 += N) {
                    const size_t n = std::min(N, lanes - l0);
                    VF acc = hn::Set(d, kLowest);
                    for (size_t kz = sz.first; kz < sz.end; ++kz)
                        for (size_t ky = sy.first; ky < sy.end; ++ky) {
                            const float* row = src +
                                               (sz.start + static_cast<ptrdiff_t>(kz)) * ss[0] +
                                               (sy.start + static_cast<ptrdiff_t>(ky)) * ss[1] +
                                               static_cast<ptrdiff_t>(l0);
                            for (size_t kx = sx.first; kx < sx.end; ++kx) {
                                const float* p =
                                        row + (sx.start + static_cast<ptrdiff_t>(kx)) * ss[2];
                                acc = Step(acc, n == N ? hn::LoadU(d, p) : LoadCols(d, p, 0, n));
                            }
                        }
                    StoreN(acc, d, o + l0, n);
                }
            }
        }
    }
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

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(MaxPoolRows);
HWY_EXPORT(MaxPoolLanes);
HWY_EXPORT(AnyNaN);

void max_pool_rows(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                   const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolRows)(src, ss, dst, ds, g);
}

void max_pool_lanes(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                    size_t lanes, const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanes)(src, ss, dst, ds, lanes, g);
}

bool any_nan(const float* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(AnyNaN)(p, n);
}

}  // namespace neomeg::dnn::x86
#endif
