// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/max_pool_backward_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cmath>

#include "src/x86/max_pool_backward_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Which of a window's values (a, b over c, e) naive's rule picks: the first NaN, else the first
// maximum; 0 and 1 in the upper row, 2 and 3 in the lower.
HWY_INLINE int picked(float a, float b, float c, float e) {
    float m = std::max(std::max(a, b), std::max(c, e));
    return std::isnan(a)   ? 0
           : std::isnan(b) ? 1
           : std::isnan(c) ? 2
           : std::isnan(e) ? 3
           : a == m        ? 0
           : b == m        ? 1
           : c == m        ? 2
                           : 3;
}

// The window's gradient: v at the picked value, zero at the others.
template <class T>
HWY_INLINE void scatter_picked(int at, T v, T* g0, T* g1) {
    g0[0] = g0[1] = g1[0] = g1[1] = T(0);
    (at < 2 ? g0 : g1)[at & 1] = v;
}

// One window by naive's rule.
HWY_INLINE void window(const float* r0, const float* r1, float v, float* g0, float* g1) {
    scatter_picked(picked(r0[0], r0[1], r1[0], r1[1]), v, g0, g1);
}

// Windows [x, x + Lanes(d)) of one row pair in vectors; false (nothing written) when one of them
// holds a NaN.
template <class D>
HWY_INLINE bool windows(D d, const float* r0, const float* r1, const float* dyr, float* g0,
                        float* g1, size_t x) {
    hn::Vec<D> a, b, c, e;
    hn::LoadInterleaved2(d, r0 + 2 * x, a, b);
    hn::LoadInterleaved2(d, r1 + 2 * x, c, e);
    auto nan = hn::Or(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Or(hn::IsNaN(c), hn::IsNaN(e)));
    if (!hn::AllFalse(d, nan))
        return false;
    auto m = hn::Max(hn::Max(a, b), hn::Max(c, e));
    // + 0: naive's sum of one -0 is +0.
    auto v = hn::Add(hn::LoadU(d, dyr + x), hn::Zero(d));
    auto ta = hn::Eq(a, m);
    auto tb = hn::AndNot(ta, hn::Eq(b, m));
    auto taken = hn::Or(ta, tb);
    auto tc = hn::AndNot(taken, hn::Eq(c, m));
    taken = hn::Or(taken, tc);
    hn::StoreInterleaved2(hn::IfThenElseZero(ta, v), hn::IfThenElseZero(tb, v), d, g0 + 2 * x);
    hn::StoreInterleaved2(hn::IfThenElseZero(tc, v), hn::IfThenZeroElse(taken, v), d, g1 + 2 * x);
    return true;
}

void Max2x2BackwardPlane(const float* src, const float* dy, float* grad, size_t rows, size_t cols,
                         size_t out_rows, size_t out_cols) {
    // Full vectors, then narrower ones for the rest of a row: LeNet's rows are 12 and 4 windows.
    const hn::CappedTag<float, 16> wide;
    const hn::CappedTag<float, 8> mid;
    const hn::CappedTag<float, 4> narrow;
    for (size_t y = 0; y < out_rows; ++y) {
        const float *r0 = src + 2 * y * cols, *r1 = r0 + cols;
        float *g0 = grad + 2 * y * cols, *g1 = g0 + cols;
        const float* dyr = dy + y * out_cols;
        auto scalar = [&](size_t from, size_t to) {
            for (size_t i = from; i < to; ++i)
                window(r0 + 2 * i, r1 + 2 * i, dyr[i] + 0.f, g0 + 2 * i, g1 + 2 * i);
        };
        size_t x = 0;
        auto run = [&](auto d) {
            const size_t lanes = hn::Lanes(d);
            for (; x + lanes <= out_cols; x += lanes)
                if (!windows(d, r0, r1, dyr, g0, g1, x))
                    scalar(x, x + lanes);
        };
        run(wide);
        run(mid);
        run(narrow);
        scalar(x, out_cols);
        // the columns past the last window
        std::fill(g0 + 2 * out_cols, g0 + cols, 0.f);
        std::fill(g1 + 2 * out_cols, g1 + cols, 0.f);
    }
    // the rows past the last window
    std::fill(grad + 2 * out_rows * cols, grad + rows * cols, 0.f);
}

// 16-bit elements (their bits) as float32: bfloat16 is float32's upper half, float16 takes the
// CPU's conversion (F16C). Both are exact.
template <bool kBF16, class DF>
HWY_INLINE hn::Vec<DF> Widen(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> bits) {
    if constexpr (kBF16) {
        const hn::RebindToUnsigned<DF> du;
        return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
    } else {
        const hn::Rebind<hwy::float16_t, DF> dh;
        return hn::PromoteTo(df, hn::BitCast(dh, bits));
    }
}

template <bool kBF16>
HWY_INLINE float Widen1(const uint16_t* p) {
    const hn::CappedTag<float, 1> d1;
    const hn::Rebind<uint16_t, decltype(d1)> dh;
    return hn::GetLane(Widen<kBF16>(d1, hn::LoadU(dh, p)));
}

// window() on 16-bit bits: compared as float32, the gradient copied as dy's bits (0 elsewhere).
template <bool kBF16>
HWY_INLINE void Window16(const uint16_t* r0, const uint16_t* r1, uint16_t v, uint16_t* g0,
                         uint16_t* g1) {
    scatter_picked(picked(Widen1<kBF16>(r0), Widen1<kBF16>(r0 + 1), Widen1<kBF16>(r1),
                          Widen1<kBF16>(r1 + 1)),
                   v, g0, g1);
}

#if HWY_TARGET != HWY_SCALAR  // no ConcatEven there: its planes take Window16 throughout
// windows() on 16-bit planes: each row's 2N elements widen in registers as two vectors whose even
// and odd lanes are the windows' columns; the selects run on dy's 16-bit bits, so the gradient is
// dy's value exactly without a conversion back.
template <bool kBF16, class D>
HWY_INLINE bool Windows16(D d, const uint16_t* r0, const uint16_t* r1, const uint16_t* dyr,
                          uint16_t* g0, uint16_t* g1, size_t x) {
    const hn::Rebind<uint16_t, D> dh;
    const size_t n = hn::Lanes(d);
    auto columns = [&](const uint16_t* r, hn::Vec<D>& even, hn::Vec<D>& odd) {
        auto lo = Widen<kBF16>(d, hn::LoadU(dh, r + 2 * x));
        auto hi = Widen<kBF16>(d, hn::LoadU(dh, r + 2 * x + n));
        even = hn::ConcatEven(d, hi, lo);
        odd = hn::ConcatOdd(d, hi, lo);
    };
    hn::Vec<D> a, b, c, e;
    columns(r0, a, b);
    columns(r1, c, e);
    auto nan = hn::Or(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Or(hn::IsNaN(c), hn::IsNaN(e)));
    if (!hn::AllFalse(d, nan))
        return false;
    auto m = hn::Max(hn::Max(a, b), hn::Max(c, e));
    auto ta = hn::Eq(a, m);
    auto tb = hn::AndNot(ta, hn::Eq(b, m));
    auto taken = hn::Or(ta, tb);
    auto tc = hn::AndNot(taken, hn::Eq(c, m));
    taken = hn::Or(taken, tc);
    // A float32 lane's mask as all ones or zero in a 16-bit lane (a saturating narrowing of -1/0).
    auto bits = [&](auto mask) {
        const hn::RebindToSigned<D> di;
        const hn::Rebind<int16_t, D> dhi;
        return hn::BitCast(dh, hn::DemoteTo(dhi, hn::BitCast(di, hn::VecFromMask(d, mask))));
    };
    // -0 as +0: naive's sum of one -0.
    auto v = hn::LoadU(dh, dyr + x);
    v = hn::IfThenZeroElse(hn::Eq(v, hn::Set(dh, uint16_t(0x8000))), v);
    hn::StoreInterleaved2(hn::And(v, bits(ta)), hn::And(v, bits(tb)), dh, g0 + 2 * x);
    hn::StoreInterleaved2(hn::And(v, bits(tc)), hn::AndNot(bits(taken), v), dh, g1 + 2 * x);
    return true;
}
#endif

template <bool kBF16>
void Plane16(const uint16_t* src, const uint16_t* dy, uint16_t* grad, size_t rows, size_t cols,
             size_t out_rows, size_t out_cols) {
    for (size_t y = 0; y < out_rows; ++y) {
        const uint16_t *r0 = src + 2 * y * cols, *r1 = r0 + cols;
        uint16_t *g0 = grad + 2 * y * cols, *g1 = g0 + cols;
        const uint16_t* dyr = dy + y * out_cols;
        auto scalar = [&](size_t from, size_t to) {
            for (size_t i = from; i < to; ++i)
                Window16<kBF16>(r0 + 2 * i, r1 + 2 * i, dyr[i] == 0x8000 ? uint16_t(0) : dyr[i],
                                g0 + 2 * i, g1 + 2 * i);
        };
        size_t x = 0;
#if HWY_TARGET != HWY_SCALAR
        auto run = [&](auto d) {
            const size_t lanes = hn::Lanes(d);
            for (; x + lanes <= out_cols; x += lanes)
                if (!Windows16<kBF16>(d, r0, r1, dyr, g0, g1, x))
                    scalar(x, x + lanes);
        };
        run(hn::CappedTag<float, 16>());
        run(hn::CappedTag<float, 8>());
        run(hn::CappedTag<float, 4>());
#endif
        scalar(x, out_cols);
        std::fill(g0 + 2 * out_cols, g0 + cols, uint16_t(0));
        std::fill(g1 + 2 * out_cols, g1 + cols, uint16_t(0));
    }
    std::fill(grad + 2 * out_rows * cols, grad + rows * cols, uint16_t(0));
}

void Max2x2BackwardPlane16(bool bf16, const uint16_t* src, const uint16_t* dy, uint16_t* grad,
                           size_t rows, size_t cols, size_t out_rows, size_t out_cols) {
    if (bf16)
        Plane16<true>(src, dy, grad, rows, cols, out_rows, out_cols);
    else
        Plane16<false>(src, dy, grad, rows, cols, out_rows, out_cols);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Max2x2BackwardPlane);

void max2x2_backward_plane(const float* src, const float* dy, float* grad, size_t rows, size_t cols,
                           size_t out_rows, size_t out_cols) {
    HWY_DYNAMIC_DISPATCH(Max2x2BackwardPlane)(src, dy, grad, rows, cols, out_rows, out_cols);
}

HWY_EXPORT(Max2x2BackwardPlane16);

void max2x2_backward_plane16(bool bf16, const uint16_t* src, const uint16_t* dy, uint16_t* grad,
                             size_t rows, size_t cols, size_t out_rows, size_t out_cols) {
    HWY_DYNAMIC_DISPATCH(Max2x2BackwardPlane16)
    (bf16, src, dy, grad, rows, cols, out_rows, out_cols);
}

}  // namespace neomeg::dnn::x86
#endif
