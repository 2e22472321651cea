// PRODUCT along a float32 row in exact float pairs where FMA is native, but for AVX2
// (reduce_hwy.h's contract). A file of its own: in reduce_hwy.cpp its code moved the MAX row loop,
// which then ran 0.111 ms for 1024 rows of 2048 on one Zen 4 thread instead of 0.093 (the same
// instructions; MIN's loop ran 0.111 there before). Highway compiles this file once per instruction
// set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/reduce_product_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>

#include "src/x86/reduce_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Pairs on AVX-512, whose sixteen float lanes carry them faster than eight double lanes multiply.
// Not on AVX2: its eight float lanes spend three multiplications a vector where four double lanes
// spend one (and a conversion), and reduce_hwy.cpp's double loop, naive's own rounding, is the
// faster there (1024 rows of 2048 on one Zen 3 thread: 0.24 ms in pairs, 0.165 in double). On
// Zen 4 the 512-bit float-to-double conversions bound that loop instead: 0.23-0.25 ms with its
// eight accumulators, 0.21 in 256-bit double lanes, against 0.133-0.145 in pairs and 0.12 for a
// plain float product (a harness, 4 KiB pages), so the pairs stay; their three multiplications a
// vector on the two FMA pipes are what is left between them and PyTorch's float product.
#if HWY_NATIVE_FMA && HWY_TARGET != HWY_AVX2
// PRODUCT along a row where FMA is native: a float pair (hi, lo) per lane carries the running
// product of a block of kProductFloatSteps values per lane, then the block's hi + lo multiplies
// double accumulators. A step is exact but for lo's rounding: p = hi x rounds, FMA gives its error
// e = hi x - p exactly, and lo' = lo x + e rounds once, an error of at most u |lo x + e| with
// |lo| <= k u |hi| after k steps (u = 2^-24): under 17 u^2 |P| per value in a block of 32. With the
// double products, the result is within u |P| + n 2^-43 |P| of the exact product P (naive's
// double product: n 2^-53 |P|; reduce_hwy.h). reduce_hwy.cpp's double loop, bound by its
// float-to-double conversions, took 0.17 ms for 1024 rows of 2048 on one Zen 4 thread, this one
// 0.135-0.14 (blocks of 8: 0.15; the underflow check costs 0.01). The pair is exact only while
// every partial product stays above 2^-100 (e is then representable, and lo's rounding, also as a
// subnormal, far below u^2): a block whose smallest |p| is below that (a zero, tiny values) or
// whose hi is not finite (an overflow, an infinity, NaN) is multiplied again in double, so zeros,
// infinities, NaN and products beyond float's range come out as naive's.
constexpr size_t kProductFloatSteps = 32;
HWY_INLINE double reduce_row_product(const float* p, size_t n) {
    const hn::ScalableTag<float> df;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t lanes = hn::Lanes(df), dl = hn::Lanes(dd), step = 4 * lanes;
    if (n < step) {
        double acc = p[0];
        for (size_t i = 1; i < n; ++i)
            acc *= double(p[i]);
        return acc;
    }
    const auto tiny = hn::Set(df, 0x1p-100f);
    auto d0 = hn::Set(dd, 1.0), d1 = d0, d2 = d0, d3 = d0;
    float hl[4 * 64], ll[4 * 64];  // more than any x86 vector's lanes, four times
    double redone = 1;             // the blocks multiplied again in double
    size_t i = 0;
    while (i + step <= n) {
        const size_t b = i;
        const float* q = p + i;
        auto h0 = hn::LoadU(df, q), h1 = hn::LoadU(df, q + lanes);
        auto h2 = hn::LoadU(df, q + 2 * lanes), h3 = hn::LoadU(df, q + 3 * lanes);
        auto l0 = hn::Zero(df), l1 = l0, l2 = l0, l3 = l0;
        auto m0 = hn::Set(df, 1.0f), m1 = m0;  // the smallest |p| of the block
        const size_t end = std::min(n - n % step, i + kProductFloatSteps * step);
        for (i += step; i < end; i += step) {
            q = p + i;
            const auto x0 = hn::LoadU(df, q), x1 = hn::LoadU(df, q + lanes);
            const auto x2 = hn::LoadU(df, q + 2 * lanes), x3 = hn::LoadU(df, q + 3 * lanes);
            const auto p0 = hn::Mul(h0, x0), p1 = hn::Mul(h1, x1);
            const auto p2 = hn::Mul(h2, x2), p3 = hn::Mul(h3, x3);
            l0 = hn::MulAdd(l0, x0, hn::MulSub(h0, x0, p0));
            l1 = hn::MulAdd(l1, x1, hn::MulSub(h1, x1, p1));
            l2 = hn::MulAdd(l2, x2, hn::MulSub(h2, x2, p2));
            l3 = hn::MulAdd(l3, x3, hn::MulSub(h3, x3, p3));
            m0 = hn::Min(m0, hn::Min(hn::Abs(p0), hn::Abs(p1)));
            m1 = hn::Min(m1, hn::Min(hn::Abs(p2), hn::Abs(p3)));
            h0 = p0;
            h1 = p1;
            h2 = p2;
            h3 = p3;
        }
        if (!hn::AllTrue(df, hn::Ge(hn::Min(m0, m1), tiny)) || !hn::AllTrue(df, hn::IsFinite(h0)) ||
            !hn::AllTrue(df, hn::IsFinite(h1)) || !hn::AllTrue(df, hn::IsFinite(h2)) ||
            !hn::AllTrue(df, hn::IsFinite(h3))) {
            for (size_t k = b; k < i; ++k)
                redone *= double(p[k]);
            continue;
        }
        hn::StoreU(h0, df, hl);
        hn::StoreU(h1, df, hl + lanes);
        hn::StoreU(h2, df, hl + 2 * lanes);
        hn::StoreU(h3, df, hl + 3 * lanes);
        hn::StoreU(l0, df, ll);
        hn::StoreU(l1, df, ll + lanes);
        hn::StoreU(l2, df, ll + 2 * lanes);
        hn::StoreU(l3, df, ll + 3 * lanes);
        for (size_t j = 0; j < 4 * lanes; j += 4 * dl) {
            auto pair = [&](size_t at) {
                return hn::Add(hn::PromoteTo(dd, hn::LoadU(dh, hl + at)),
                               hn::PromoteTo(dd, hn::LoadU(dh, ll + at)));
            };
            d0 = hn::Mul(d0, pair(j));
            d1 = hn::Mul(d1, pair(j + dl));
            d2 = hn::Mul(d2, pair(j + 2 * dl));
            d3 = hn::Mul(d3, pair(j + 3 * dl));
        }
    }
    for (; i + dl <= n; i += dl)
        d0 = hn::Mul(d0, hn::PromoteTo(dd, hn::LoadU(dh, p + i)));
    double lane[64];
    hn::StoreU(hn::Mul(hn::Mul(d0, d1), hn::Mul(d2, d3)), dd, lane);
    double acc = redone;
    for (size_t j = 0; j < dl; ++j)
        acc *= lane[j];
    for (; i < n; ++i)
        acc *= double(p[i]);
    return acc;
}

bool ProductRow(const float* p, size_t n, double* out) {
    *out = reduce_row_product(p, n);
    return true;
}
#else
// Without a fused multiply-add the pair's error term is not exact, and on AVX2 the double loop is
// faster: reduce_hwy.cpp's double loop.
bool ProductRow(const float*, size_t, double*) {
    return false;
}
#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ProductRow);

bool reduce_f32_product_row(const float* src, size_t n, double* product) {
    return HWY_DYNAMIC_DISPATCH(ProductRow)(src, n, product);
}

}  // namespace neomeg::dnn::x86
#endif
