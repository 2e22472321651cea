// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/reduce_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cmath>

#include "neomeg/dnn/operators/reduce.h"
#include "src/x86/reduce_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One accumulation rule, on vectors of doubles and on scalars (lane combination and tails);
// first() turns an element into an accumulator (SUM_SQR squares it), combine() merges two
// accumulators (SUM_SQR adds them).
struct Identity {
    template <class D, class V>
    V first(D, V v) const {
        return v;
    }
    double first(double v) const { return v; }
};
struct Sum : Identity {
    static constexpr bool kBlockedInFloat = true;
    template <class D, class V>
    V step(D, V acc, V v) const {
        return hn::Add(acc, v);
    }
    double step(double acc, double v) const { return acc + v; }
    double combine(double a, double b) const { return a + b; }
};
struct SumSqr {
    static constexpr bool kBlockedInFloat = true;
    template <class D, class V>
    V first(D, V v) const {
        return hn::Mul(v, v);
    }
    double first(double v) const { return v * v; }
    double combine(double a, double b) const { return a + b; }
    template <class D, class V>
    V step(D, V acc, V v) const {
        // v * v is exact in double (a float's square has at most 48 significant bits); in a
        // float block it rounds once, inside the block's bound (reduce_row_blocked).
        return hn::MulAdd(v, v, acc);
    }
    double step(double acc, double v) const { return acc + v * v; }
};
// Once the accumulator is NaN it stays NaN: nothing compares greater than it. A maximum or minimum
// is one of its operands, exact in float: their rows run in float lanes (kExactInFloat).
struct Max : Identity {
    static constexpr bool kExactInFloat = true;
    // Max without NaN's rule (x86's max returns its second operand when either is NaN).
    template <class V>
    V fast(V acc, V v) const {
        return hn::Max(acc, v);
    }
    // The fast step over a vector's lanes, in every lane.
    template <class D, class V>
    V fast_lanes(D d, V v) const {
        return hn::MaxOfLanes(d, v);
    }
    template <class D, class V>
    V step(D, V acc, V v) const {
        return hn::IfThenElse(hn::Or(hn::Gt(v, acc), hn::IsNaN(v)), v, acc);
    }
    double step(double acc, double v) const {
        return std::isnan(acc) ? acc : (std::isnan(v) || v > acc ? v : acc);
    }
    double combine(double a, double b) const { return step(a, b); }
};
struct Min : Identity {
    static constexpr bool kExactInFloat = true;
    template <class V>
    V fast(V acc, V v) const {
        return hn::Min(acc, v);
    }
    template <class D, class V>
    V fast_lanes(D d, V v) const {
        return hn::MinOfLanes(d, v);
    }
    template <class D, class V>
    V step(D, V acc, V v) const {
        return hn::IfThenElse(hn::Or(hn::Lt(v, acc), hn::IsNaN(v)), v, acc);
    }
    double step(double acc, double v) const {
        return std::isnan(acc) ? acc : (std::isnan(v) || v < acc ? v : acc);
    }
    double combine(double a, double b) const { return step(a, b); }
};

// The product of doubles: each step rounds, as naive's running product does (in another order, so
// the last bit of the double may differ, which the float result's rounding almost always hides).
struct Product : Identity {
    static constexpr bool kPairInFloat = true;  // reduce_product_hwy.cpp, or reduce_row_product
    template <class D, class V>
    V step(D, V acc, V v) const {
        return hn::Mul(acc, v);
    }
    double step(double acc, double v) const { return acc * v; }
    double combine(double a, double b) const { return a * b; }
};

// MAX and MIN along a row in float lanes, four independent accumulators (the compare-and-select
// step is a chain of three operations): 1024 rows of 2048 took 0.36 ms on one Zen 4 thread in
// double lanes, twice SUM's time. The lanes then combine in double like the other modes'.
template <class R>
HWY_INLINE double reduce_row_float(const R& r, const float* p, size_t n) {
    const hn::ScalableTag<float> df;
    const size_t lanes = hn::Lanes(df);
    if (n < 4 * lanes) {
        double acc = r.first(double(p[0]));
        for (size_t i = 1; i < n; ++i)
            acc = r.step(acc, double(p[i]));
        return acc;
    }
    auto a0 = hn::LoadU(df, p), a1 = hn::LoadU(df, p + lanes);
    auto a2 = hn::LoadU(df, p + 2 * lanes), a3 = hn::LoadU(df, p + 3 * lanes);
    size_t i = 4 * lanes;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        a0 = r.step(df, a0, hn::LoadU(df, p + i));
        a1 = r.step(df, a1, hn::LoadU(df, p + i + lanes));
        a2 = r.step(df, a2, hn::LoadU(df, p + i + 2 * lanes));
        a3 = r.step(df, a3, hn::LoadU(df, p + i + 3 * lanes));
    }
    // Accumulators in row order, so that a NaN met first in its lane comes first here too.
    float lane[4 * 64];  // more than any x86 vector's lanes, four times
    hn::StoreU(a0, df, lane);
    hn::StoreU(a1, df, lane + lanes);
    hn::StoreU(a2, df, lane + 2 * lanes);
    hn::StoreU(a3, df, lane + 3 * lanes);
    double acc = lane[0];
    for (size_t j = 1; j < 4 * lanes; ++j)
        acc = r.combine(acc, double(lane[j]));
    for (; i < n; ++i)
        acc = r.step(acc, double(p[i]));
    return acc;
}

// MAX and MIN first with the plain max/min instruction (one operation a vector where the NaN rule
// takes three: 0.18 ms for 1024x2048 on one Zen 4 thread, twice a pass over memory) and a running
// float sum beside it, which is NaN when the row holds a NaN (or +inf and -inf, or overflows to
// both): only such rows run again under the NaN rule above.
template <class R>
HWY_INLINE double reduce_row_extreme(const R& r, const float* p, size_t n) {
    const hn::ScalableTag<float> df;
    const size_t lanes = hn::Lanes(df);
    if (n < 4 * lanes)
        return reduce_row_float(r, p, n);
    auto a0 = hn::LoadU(df, p), a1 = hn::LoadU(df, p + lanes);
    auto a2 = hn::LoadU(df, p + 2 * lanes), a3 = hn::LoadU(df, p + 3 * lanes);
    auto s0 = a0, s1 = a1, s2 = a2, s3 = a3;
    size_t i = 4 * lanes;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        auto v0 = hn::LoadU(df, p + i), v1 = hn::LoadU(df, p + i + lanes);
        auto v2 = hn::LoadU(df, p + i + 2 * lanes), v3 = hn::LoadU(df, p + i + 3 * lanes);
        a0 = r.fast(a0, v0);
        a1 = r.fast(a1, v1);
        a2 = r.fast(a2, v2);
        a3 = r.fast(a3, v3);
        s0 = hn::Add(s0, v0);
        s1 = hn::Add(s1, v1);
        s2 = hn::Add(s2, v2);
        s3 = hn::Add(s3, v3);
    }
    auto s = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
    if (!hn::AllFalse(df, hn::IsNaN(s)))
        return reduce_row_float(r, p, n);
    // No NaN: the lanes combine in vectors too (one scalar step per lane, NaN checks and all, cost
    // max along rows of 2048 in cache 13% of its time)
    double acc = hn::GetLane(r.fast_lanes(df, r.fast(r.fast(a0, a1), r.fast(a2, a3))));
    for (; i < n; ++i)
        acc = r.step(acc, double(p[i]));
    return acc;
}

// SUM, MEAN and SUM_SQR along a row: float steps in blocks of kFloatSteps per lane, each block's
// lanes then added into double accumulators. A float32 row summed in double lanes is bound by the
// float-to-double conversions (0.15 ms for 1024x2048 on one Zen 4 thread, where a pass over the
// memory takes 0.095 ms); in float lanes alone its error would grow with the row's length. With
// u = 2^-24 and |x| the row's absolute values, each block's float sum errs by at most
// (kFloatSteps - 1) u sum|x| (kFloatSteps u sum x^2 for SUM_SQR, whose squares round too) to
// first order, the double accumulation by n 2^-53 sum|x|, and the float result rounds once: the
// contract the tests check against naive's double sum on rows built to cancel and to round one
// way (ReduceFloatSumsMeetTheirBound).
constexpr size_t kFloatSteps = kReduceFloatSteps;

// From this many elements a row is read as four streams, its quarters side by side, each of the
// four float accumulators taking one: one core reads memory faster from several places at once
// than from one (the prefetchers follow each). A 16M-float sum on one Zen 4 core read 16.6-17.6
// GB/s as one stream and 25.6-26.5 as four (a throwaway loop: 26.8 with eight), where a STREAM
// triad moved 22.7-23.8.
constexpr size_t kStreamsFrom = size_t(1) << 16;

// The accumulators of reduce_row_blocked over `steps` steps: accumulator k reads the vector at
// base[k] + m * stride in step m.
template <class R>
HWY_INLINE double blocked_steps(const R& r, const float* const (&base)[4], size_t stride,
                                size_t steps) {
    const hn::ScalableTag<float> df;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;  // half a float vector, widened to doubles
    const size_t lanes = hn::Lanes(df), dl = hn::Lanes(dd);
    auto d0 = hn::Zero(dd), d1 = d0, d2 = d0, d3 = d0;
    float lane[4 * 64];  // more than any x86 vector's lanes, four times
    double redone = 0;   // the blocks summed again in double
    for (size_t m = 0; m < steps;) {
        const size_t b = m;
        auto at = [&](size_t k) { return hn::LoadU(df, base[k] + m * stride); };
        auto a0 = r.first(df, at(0)), a1 = r.first(df, at(1)), a2 = r.first(df, at(2));
        auto a3 = r.first(df, at(3));
        const size_t end = std::min(steps, m + kFloatSteps);
        for (++m; m < end; ++m) {
            a0 = r.step(df, a0, at(0));
            a1 = r.step(df, a1, at(1));
            a2 = r.step(df, a2, at(2));
            a3 = r.step(df, a3, at(3));
        }
        // A block whose float sums are not finite (an infinity or NaN in it, or a float
        // overflow that naive's double sum would not have) is summed again in double, so
        // that infinities, NaN and sums near float's limit come out as naive's.
        if (!hn::AllTrue(df, hn::IsFinite(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))))) {
            for (size_t q = b; q < m; ++q)
                for (size_t k = 0; k < 4; ++k)
                    for (size_t j = 0; j < lanes; ++j)
                        redone = r.step(redone, double(base[k][q * stride + j]));
            continue;
        }
        hn::StoreU(a0, df, lane);
        hn::StoreU(a1, df, lane + lanes);
        hn::StoreU(a2, df, lane + 2 * lanes);
        hn::StoreU(a3, df, lane + 3 * lanes);
        for (size_t j = 0; j < 4 * lanes; j += 4 * dl) {
            d0 = hn::Add(d0, hn::PromoteTo(dd, hn::LoadU(dh, lane + j)));
            d1 = hn::Add(d1, hn::PromoteTo(dd, hn::LoadU(dh, lane + j + dl)));
            d2 = hn::Add(d2, hn::PromoteTo(dd, hn::LoadU(dh, lane + j + 2 * dl)));
            d3 = hn::Add(d3, hn::PromoteTo(dd, hn::LoadU(dh, lane + j + 3 * dl)));
        }
    }
    return hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(d0, d1), hn::Add(d2, d3)))) + redone;
}

template <class R>
HWY_INLINE double reduce_row_blocked(const R& r, const float* p, size_t n) {
    const hn::ScalableTag<float> df;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t lanes = hn::Lanes(df), dl = hn::Lanes(dd), step = 4 * lanes;
    size_t i = 0;
    double acc = 0;
    if (n >= step) {
        if (n >= kStreamsFrom) {
            const size_t quarter = n / step * lanes;
            const float* base[4] = {p, p + quarter, p + 2 * quarter, p + 3 * quarter};
            acc = blocked_steps(r, base, lanes, quarter / lanes);
            i = 4 * quarter;
        } else {
            const float* base[4] = {p, p + lanes, p + 2 * lanes, p + 3 * lanes};
            acc = blocked_steps(r, base, step, n / step);
            i = n / step * step;
        }
        // The last partial step in double lanes: rows of 784 (a 28x28 mean) left 16 values each
        // to the scalar loop, a sixth of the time.
        auto d0 = hn::Zero(dd);
        for (; i + dl <= n; i += dl)
            d0 = r.step(dd, d0, hn::PromoteTo(dd, hn::LoadU(dh, p + i)));
        acc += hn::GetLane(hn::SumOfLanes(dd, d0));
    } else {
        acc = r.first(double(p[0]));
        i = 1;
    }
    for (; i < n; ++i)
        acc = r.step(acc, double(p[i]));
    return acc;
}

// PRODUCT along a row in double lanes, like naive (in another order), where
// reduce_product_hwy.cpp's exact float pairs do not run: targets without FMA, and AVX2, where a
// pair costs three multiplications a vector of eight floats and this loop two of four doubles
// (1024 rows of 2048 on one Zen 3 thread: pairs 0.24 ms, this loop 0.165). Eight accumulators:
// with two the multiplications' latency bound it (0.27 ms).
constexpr size_t kProductVectors = 8;
HWY_INLINE double reduce_row_product(const float* p, size_t n) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd), step = kProductVectors * lanes;
    size_t i = 0;
    double acc = 1;
    if (n >= step) {
        auto at = [&](size_t k) { return hn::PromoteTo(dd, hn::LoadU(df, p + k)); };
        auto a0 = at(0), a1 = at(lanes), a2 = at(2 * lanes), a3 = at(3 * lanes);
        auto a4 = at(4 * lanes), a5 = at(5 * lanes), a6 = at(6 * lanes), a7 = at(7 * lanes);
        for (i = step; i + step <= n; i += step) {
            a0 = hn::Mul(a0, at(i));
            a1 = hn::Mul(a1, at(i + lanes));
            a2 = hn::Mul(a2, at(i + 2 * lanes));
            a3 = hn::Mul(a3, at(i + 3 * lanes));
            a4 = hn::Mul(a4, at(i + 4 * lanes));
            a5 = hn::Mul(a5, at(i + 5 * lanes));
            a6 = hn::Mul(a6, at(i + 6 * lanes));
            a7 = hn::Mul(a7, at(i + 7 * lanes));
        }
        for (; i + lanes <= n; i += lanes)
            a0 = hn::Mul(a0, at(i));
        a0 = hn::Mul(hn::Mul(hn::Mul(a0, a1), hn::Mul(a2, a3)),
                     hn::Mul(hn::Mul(a4, a5), hn::Mul(a6, a7)));
        double lane[64];  // more than any x86 vector's lanes
        hn::StoreU(a0, dd, lane);
        for (size_t j = 0; j < lanes; ++j)
            acc *= lane[j];
    }
    for (; i < n; ++i)
        acc *= double(p[i]);
    return acc;
}

template <class R>
HWY_INLINE double reduce_row(const R& r, const float* p, size_t n) {
    if constexpr (requires { R::kExactInFloat; }) {
        return reduce_row_extreme(r, p, n);
    } else if constexpr (requires { R::kBlockedInFloat; }) {
        return reduce_row_blocked(r, p, n);
    } else {
        static_assert(
                requires { R::kPairInFloat; }, "rows of a mode without a row loop");
        double product;
        if (reduce_f32_product_row(p, n, &product))
            return product;
        return reduce_row_product(p, n);
    }
}

// Reducing across rows (inner > 1): kColumnVectors vectors of columns accumulate in registers
// while the rows go by, each row's stretch read contiguously. (One vector of columns walked down
// the whole axis before the next was a chain of dependent additions whose loads jumped a row each:
// 1024x2048 along axis 0 took 0.78 ms on one Zen 4 thread, four times the same sum along rows.)
constexpr size_t kColumnVectors = 8;
template <class R>
HWY_INLINE void reduce_columns(const R& r, const float* src, size_t axis, size_t stride,
                               size_t inner, double* acc) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    const size_t block = kColumnVectors * lanes;
    size_t i = 0;
    for (; i + block <= inner; i += block) {
        hn::Vec<decltype(dd)> a[kColumnVectors];
        for (size_t v = 0; v < kColumnVectors; ++v)
            a[v] = r.first(dd, hn::PromoteTo(dd, hn::LoadU(df, src + i + v * lanes)));
        for (size_t k = 1; k < axis; ++k) {
            const float* row = src + k * stride + i;
            for (size_t v = 0; v < kColumnVectors; ++v)
                a[v] = r.step(dd, a[v], hn::PromoteTo(dd, hn::LoadU(df, row + v * lanes)));
        }
        for (size_t v = 0; v < kColumnVectors; ++v)
            hn::StoreU(a[v], dd, acc + i + v * lanes);
    }
    for (; i + lanes <= inner; i += lanes) {
        auto a = r.first(dd, hn::PromoteTo(dd, hn::LoadU(df, src + i)));
        for (size_t k = 1; k < axis; ++k)
            a = r.step(dd, a, hn::PromoteTo(dd, hn::LoadU(df, src + k * stride + i)));
        hn::StoreU(a, dd, acc + i);
    }
    for (; i < inner; ++i) {
        double a = r.first(double(src[i]));
        for (size_t k = 1; k < axis; ++k)
            a = r.step(a, double(src[k * stride + i]));
        acc[i] = a;
    }
}

// MAX and MIN across rows in float lanes (exact: the result is one of the values), twice the
// columns a vector of doubles holds: min over axis 0 of 1024x2048 took 0.29 ms on one Zen 4 thread
// in double lanes, SUM's 0.16 ms in float.
template <class R>
HWY_INLINE void reduce_columns_float(const R& r, const float* src, size_t axis, size_t stride,
                                     size_t inner, float* acc) {
    const hn::ScalableTag<float> df;
    const size_t lanes = hn::Lanes(df);
    const size_t block = kColumnVectors * lanes;
    size_t i = 0;
    for (; i + block <= inner; i += block) {
        // The plain min/max and a float sum beside it, as reduce_row_extreme; a NaN sum (a NaN
        // in the block, or infinities of both signs) sends the block through the NaN rule.
        hn::Vec<decltype(df)> a[kColumnVectors], s[kColumnVectors];
        for (size_t v = 0; v < kColumnVectors; ++v)
            s[v] = a[v] = hn::LoadU(df, src + i + v * lanes);
        for (size_t k = 1; k < axis; ++k) {
            const float* row = src + k * stride + i;
            for (size_t v = 0; v < kColumnVectors; ++v) {
                auto x = hn::LoadU(df, row + v * lanes);
                a[v] = r.fast(a[v], x);
                s[v] = hn::Add(s[v], x);
            }
        }
        auto nan = hn::IsNaN(s[0]);
        for (size_t v = 1; v < kColumnVectors; ++v)
            nan = hn::Or(nan, hn::IsNaN(s[v]));
        if (!hn::AllFalse(df, nan)) {
            for (size_t v = 0; v < kColumnVectors; ++v)
                a[v] = hn::LoadU(df, src + i + v * lanes);
            for (size_t k = 1; k < axis; ++k) {
                const float* row = src + k * stride + i;
                for (size_t v = 0; v < kColumnVectors; ++v)
                    a[v] = r.step(df, a[v], hn::LoadU(df, row + v * lanes));
            }
        }
        for (size_t v = 0; v < kColumnVectors; ++v)
            hn::StoreU(a[v], df, acc + i + v * lanes);
    }
    for (; i + lanes <= inner; i += lanes) {
        auto a = hn::LoadU(df, src + i);
        for (size_t k = 1; k < axis; ++k)
            a = r.step(df, a, hn::LoadU(df, src + k * stride + i));
        hn::StoreU(a, df, acc + i);
    }
    for (; i < inner; ++i) {
        double a = src[i];
        for (size_t k = 1; k < axis; ++k)
            a = r.step(a, double(src[k * stride + i]));
        acc[i] = static_cast<float>(a);
    }
}

// dst[i] = reduction over k < axis of src[k * stride + i], for i < n; the columns of one outer row.
template <class R>
HWY_INLINE void run_columns(const R& r, bool mean, const float* src, float* dst, size_t axis,
                            size_t stride, size_t n) {
    // Column blocks small enough that their accumulators stay in L1.
    constexpr size_t kBlock = 512;
    for (size_t b = 0; b < n; b += kBlock) {
        size_t m = n - b < kBlock ? n - b : kBlock;
        if constexpr (requires { R::kExactInFloat; }) {
            reduce_columns_float(r, src + b, axis, stride, m, dst + b);
        } else {
            double acc[kBlock];
            reduce_columns(r, src + b, axis, stride, m, acc);
            float* out = dst + b;
            for (size_t i = 0; i < m; ++i)
                out[i] = static_cast<float>(mean ? acc[i] / double(axis) : acc[i]);
        }
    }
}

template <class R>
HWY_INLINE void run(const R& r, bool mean, const float* src, float* dst, size_t ob, size_t oe,
                    size_t axis, size_t inner) {
    if (inner == 1) {
        for (size_t o = ob; o < oe; ++o) {
            double v = reduce_row(r, src + o * axis, axis);
            dst[o] = static_cast<float>(mean ? v / double(axis) : v);
        }
        return;
    }
    for (size_t o = ob; o < oe; ++o)
        run_columns(r, mean, src + o * axis * inner, dst + o * inner, axis, inner, inner);
}

bool Reduce(ReduceMode mode, const float* src, float* dst, size_t ob, size_t oe, size_t axis,
            size_t inner) {
    switch (mode) {
        case ReduceMode::SUM:
            return run(Sum(), false, src, dst, ob, oe, axis, inner), true;
        case ReduceMode::MEAN:
            return run(Sum(), true, src, dst, ob, oe, axis, inner), true;
        case ReduceMode::SUM_SQR:
            return run(SumSqr(), false, src, dst, ob, oe, axis, inner), true;
        case ReduceMode::MAX:
            return run(Max(), false, src, dst, ob, oe, axis, inner), true;
        case ReduceMode::MIN:
            return run(Min(), false, src, dst, ob, oe, axis, inner), true;
        case ReduceMode::PRODUCT:
            return run(Product(), false, src, dst, ob, oe, axis, inner), true;
        default:
            return false;
    }
}

// reduce_f32_columns; false for a mode this file does not compute.
bool Columns(ReduceMode mode, const float* src, float* dst, size_t axis, size_t stride, size_t n) {
    switch (mode) {
        case ReduceMode::SUM:
            return run_columns(Sum(), false, src, dst, axis, stride, n), true;
        case ReduceMode::MEAN:
            return run_columns(Sum(), true, src, dst, axis, stride, n), true;
        case ReduceMode::SUM_SQR:
            return run_columns(SumSqr(), false, src, dst, axis, stride, n), true;
        case ReduceMode::MAX:
            return run_columns(Max(), false, src, dst, axis, stride, n), true;
        case ReduceMode::MIN:
            return run_columns(Min(), false, src, dst, axis, stride, n), true;
        case ReduceMode::PRODUCT:
            return run_columns(Product(), false, src, dst, axis, stride, n), true;
        default:
            return false;
    }
}

// reduce_f32_run; false for a mode this file does not compute.
bool Run(ReduceMode mode, const float* src, size_t n, double* acc) {
    switch (mode) {
        case ReduceMode::SUM:
        case ReduceMode::MEAN:
            return *acc = reduce_row(Sum(), src, n), true;
        case ReduceMode::SUM_SQR:
            return *acc = reduce_row(SumSqr(), src, n), true;
        case ReduceMode::MAX:
            return *acc = reduce_row(Max(), src, n), true;
        case ReduceMode::MIN:
            return *acc = reduce_row(Min(), src, n), true;
        case ReduceMode::PRODUCT:
            return *acc = reduce_row(Product(), src, n), true;
        default:
            return false;
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Reduce);
HWY_EXPORT(Run);
HWY_EXPORT(Columns);

bool reduce_f32_supported(ReduceMode mode) {
    // An empty range touches no memory: this asks the mode switch itself.
    return HWY_DYNAMIC_DISPATCH(Reduce)(mode, nullptr, nullptr, 0, 0, 1, 1);
}

void reduce_f32(ReduceMode mode, const float* src, float* dst, size_t outer_begin, size_t outer_end,
                size_t axis, size_t inner) {
    (void)HWY_DYNAMIC_DISPATCH(Reduce)(mode, src, dst, outer_begin, outer_end, axis, inner);
}

void reduce_f32_columns(ReduceMode mode, const float* src, float* dst, size_t axis, size_t stride,
                        size_t n) {
    (void)HWY_DYNAMIC_DISPATCH(Columns)(mode, src, dst, axis, stride, n);
}

double reduce_f32_run(ReduceMode mode, const float* src, size_t n) {
    double acc = 0;
    (void)HWY_DYNAMIC_DISPATCH(Run)(mode, src, n, &acc);
    return acc;
}

double reduce_combine(ReduceMode mode, double a, double b) {
    // Max's and Min's step: a NaN accumulator stays, a NaN operand wins.
    if (mode == ReduceMode::MAX)
        return std::isnan(a) ? a : (std::isnan(b) || b > a ? b : a);
    if (mode == ReduceMode::MIN)
        return std::isnan(a) ? a : (std::isnan(b) || b < a ? b : a);
    if (mode == ReduceMode::PRODUCT)
        return a * b;
    return a + b;
}

}  // namespace neomeg::dnn::x86
#endif
