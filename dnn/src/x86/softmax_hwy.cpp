// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/softmax_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#include "src/x86/exp_f32_hwy-inl.h"
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/x86/softmax_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// exp of every lane: ExpF, and std::exp for the lanes outside its range (subnormal results, 0 for
// -inf, infinities and NaN).
HWY_INLINE V exp_lanes(D d, V x) {
    const ExpF f;
    V r = f(d, x);
    const auto out = f.special(d, &x);
    if (HWY_UNLIKELY(!hn::AllFalse(d, out))) {
        alignas(HWY_MAX_BYTES) float in[kMaxLanes], res[kMaxLanes];
        hn::Store(x, d, in);
        hn::Store(r, d, res);
        for (size_t j = 0; j < hn::Lanes(d); ++j)
            if (!(in[j] >= -87.0f && in[j] <= 88.0f))
                res[j] = std::exp(in[j]);
        r = hn::Load(d, res);
    }
    return r;
}

// exp_lanes for softmax's x - max: x <= 0 or NaN (which exp_f32 passes on, and the row's sum then
// catches), so one comparison finds the lanes for std::exp.
HWY_INLINE V exp_nonpositive(D d, V x) {
    V r = exp_f32<false>(d, x, x);
    const auto out = hn::Lt(x, hn::Set(d, -87.0f));
    if (HWY_UNLIKELY(!hn::AllFalse(d, out))) {
        alignas(HWY_MAX_BYTES) float in[kMaxLanes], res[kMaxLanes];
        hn::Store(x, d, in);
        hn::Store(r, d, res);
        for (size_t j = 0; j < hn::Lanes(d); ++j)
            if (in[j] < -87.0f)
                res[j] = std::exp(in[j]);
        r = hn::Load(d, res);
    }
    return r;
}

// Naive's forward in double along one strided line, for lines holding a NaN or an infinity.
void scalar_forward(const float* x, float* y, size_t len, size_t stride, bool log) {
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < len; ++k)
        mx = std::max(mx, double(x[k * stride]));
    double sum = 0;
    for (size_t k = 0; k < len; ++k)
        sum += std::exp(double(x[k * stride]) - mx);
    const double log_sum = std::log(sum);
    for (size_t k = 0; k < len; ++k) {
        double v = x[k * stride];
        y[k * stride] = static_cast<float>(log ? v - mx - log_sum : std::exp(v - mx) / sum);
    }
}

// The lanes of a row's last, partial vector: [i, len), len - i < Lanes.
HWY_INLINE auto tail_mask(D d, size_t i, size_t len) {
    return hn::FirstN(d, len - i);
}

// The row's maximum and minimum: the tail's missing elements are left out. A NaN may be dropped
// by Max and Min; the sum that follows catches it.
struct MaxMin {
    float max, min;
};
HWY_INLINE MaxMin row_max_min(D d, const float* x, size_t len) {
    const size_t n = hn::Lanes(d);
    V m0 = hn::Set(d, -kInf), m1 = m0, l0 = hn::Set(d, kInf), l1 = l0;
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        const V a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + n);
        m0 = hn::Max(m0, a);
        m1 = hn::Max(m1, b);
        l0 = hn::Min(l0, a);
        l1 = hn::Min(l1, b);
    }
    if (i + n <= len) {
        const V a = hn::LoadU(d, x + i);
        m0 = hn::Max(m0, a);
        l0 = hn::Min(l0, a);
        i += n;
    }
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        const V a = hn::MaskedLoad(mask, d, x + i);
        m1 = hn::Max(m1, hn::IfThenElse(mask, a, m1));
        l1 = hn::Min(l1, hn::IfThenElse(mask, a, l1));
    }
    return {hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1))),
            hn::GetLane(hn::MinOfLanes(d, hn::Min(l0, l1)))};
}

// x - max for the tail's lanes, 0 (exp 1, then masked off) for the missing ones: no lane reaches
// exp_nonpositive's scalar path for want of an element.
HWY_INLINE V tail_diff(D d, const float* x, V vm, hn::Mask<D> mask) {
    return hn::IfThenElseZero(mask, hn::Sub(hn::MaskedLoad(mask, d, x), vm));
}

void forward_row(const float* x, float* y, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    const float mx = row_max_min(d, x, len).max;
    if (!std::isfinite(mx)) {
        scalar_forward(x, y, len, 1, false);
        return;
    }
    const V vm = hn::Set(d, mx);
    V s0 = hn::Zero(d), s1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        V e0 = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i), vm));
        V e1 = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i + n), vm));
        hn::StoreU(e0, d, y + i);
        hn::StoreU(e1, d, y + i + n);
        s0 = hn::Add(s0, e0);
        s1 = hn::Add(s1, e1);
    }
    if (i + n <= len) {
        V e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i), vm));
        hn::StoreU(e, d, y + i);
        s0 = hn::Add(s0, e);
        i += n;
    }
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        V e = hn::IfThenElseZero(mask, exp_nonpositive(d, tail_diff(d, x + i, vm, mask)));
        hn::BlendedStore(e, mask, d, y + i);
        s1 = hn::Add(s1, e);
    }
    const float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    if (!std::isfinite(sum)) {  // a NaN
        scalar_forward(x, y, len, 1, false);
        return;
    }
    const V vr = hn::Set(d, 1.0f / sum);
    for (i = 0; i + n <= len; i += n)
        hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vr), d, y + i);
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        hn::BlendedStore(hn::Mul(hn::MaskedLoad(mask, d, y + i), vr), mask, d, y + i);
    }
}

// s + c += e without losing s's rounding error (Knuth's TwoSum: exact whatever the magnitudes).
HWY_INLINE void two_sum_add(V& s, V& c, V e) {
    const V t = hn::Add(s, e);
    const V z = hn::Sub(t, s);
    c = hn::Add(c, hn::Add(hn::Sub(s, hn::Sub(t, z)), hn::Sub(e, z)));
    s = t;
}

// How ExpSum splits x - max into the float pair hi + lo exactly, by Dekker's Fast2Sum: with a the
// operand of the larger magnitude, lo = b - (hi - a). kMinMax takes a = min(x, -max) and b =
// max(x, -max), right for any x <= max (x <= -max <= 0 gives |x| >= max; above -max,
// |x| <= |max|, and max < 0 gives |x| >= |max|): 4 operations after hi where Knuth's TwoSum took
// 5. Where the line's signs decide it, 2: kMaxLarger where |max| >= |x| (max >= 0 and every
// x >= -max), kXLarger where |x| >= |max| (max <= 0).
enum class Split { kMinMax, kMaxLarger, kXLarger };

// The rounding error lo of hi = fl(x + neg_max), as kSplit allows.
template <Split kSplit>
HWY_INLINE V split_lo(V x, V neg_max, V hi) {
    if constexpr (kSplit == Split::kMinMax)
        return hn::Sub(hn::Max(x, neg_max), hn::Sub(hi, hn::Min(x, neg_max)));
    else if constexpr (kSplit == Split::kMaxLarger)
        return hn::Sub(x, hn::Sub(hi, neg_max));
    else
        return hn::Sub(neg_max, hn::Sub(hi, x));
}

// exp(x - max) summed for log-softmax, whose log1p wants the sum less 1: the lanes where x is the
// maximum (exp exactly 1) are counted in `ones`, the other terms summed in s with TwoSum's error
// terms in c. Summing the 1 with them, in float or double, would leave log(sum) an absolute error
// of the sum's rounding, far from a tiny log(sum)'s precision (a confident classifier's loss:
// naive's double sum puts it thousands of ULPs off). x - max is taken exactly, as a float pair,
// for the same reason: its rounding (up to 2^-20 for logits about 30) is a relative error of its
// exp. With kDeep, lanes below exp_f32's range (subnormal terms, -inf) are left out and flagged in
// `deep`, for deep_terms after the loop: a call to std::exp inside it made GCC keep the
// accumulators in memory, whose store-to-load latency then bound the loop. Lines whose minimum
// is within 87 of their maximum (nearly all) have no such lane and take kDeep = false, and a
// Split chosen from the line's maximum and minimum: 29 or 31 vector operations per vector of x
// where TwoSum's split and the deep flags took 37, for the same pair and the same sums.
template <Split kSplit, bool kDeep>
struct ExpSum {
    static constexpr bool kDeepLanes = kDeep;
    static constexpr bool kOneChain = false;
    V s, c, ones, deep;

    explicit ExpSum(D d) : s(hn::Zero(d)), c(s), ones(s), deep(s) {}

    // Every lane, or (kMasked) the lanes of `valid` only.
    template <bool kMasked = false, class M = hn::Mask<D>>
    HWY_INLINE void add(D d, V x, V neg_max, M valid = M()) {
        const V hi = hn::Add(x, neg_max), lo = split_lo<kSplit>(x, neg_max, hi);
        auto top = hn::Eq(hi, hn::Zero(d));
        auto skip = top;
        if constexpr (kDeep) {
            auto below = hn::Lt(hi, hn::Set(d, -87.0f));
            if constexpr (kMasked)
                below = hn::And(below, valid);
            deep = hn::Or(deep, hn::VecFromMask(d, below));
            skip = hn::Or(skip, below);
        }
        if constexpr (kMasked) {
            top = hn::And(top, valid);
            skip = hn::Or(skip, hn::Not(valid));
        }
        // A masked add on AVX-512. A deep lane's exp may be NaN (x = -inf): the term is zeroed.
        ones = hn::IfThenElse(top, hn::Add(ones, hn::Set(d, 1.0f)), ones);
        two_sum_add(s, c, hn::IfThenZeroElse(skip, exp_f32<true>(d, hi, lo)));
    }
};

// Rows whose span, max - min, is at most kWideSpan (and length at most kWideMaxLen) sum in double
// lanes instead (ExpSumWide), the maximum's 1s among the other terms. Every other term is then at
// least e^-15, so t = sum - 1 >= (len - 1) e^-15 and L = log1p(t) >= len 2^-23 for
// 2 <= len <= 2^22; the double sum of len terms in [0, 1] is within len 2^-53 of sum, which moves
// L by at most len 2^-53 <= 2^-30 L: a 64th of a float ULP of y, where y = -L is the smallest
// |y| (len = 1: the sum is exactly 1). Rows past the span (a confident classifier's) keep ExpSum,
// whose tiny t only the counted ones leave precise.
constexpr float kWideSpan = 15.0f;
constexpr size_t kWideMaxLen = size_t(1) << 22;

// exp(x - max) in double lanes: per vector of x, the promotes of the terms' two halves and two
// double adds where ExpSum takes TwoSum, the count of the ones and their zeroing: 23 vector
// operations where ExpSum takes 28 (kMaxLarger; 25 and 30 with kMinMax). One chain of sums: its
// adds' latency is not the bound, and it leaves more of AVX2's 16 registers to exp's constants. The
// pair hi + lo as ExpSum's: within the span, hi's rounding (up to 2^-21) is still a relative error
// of the term. The double sum is precise enough only within the span (above): a second kind, not
// ExpSum's replacement.
template <Split kSplit>
struct ExpSumWide {
    static constexpr bool kDeepLanes = false;
    static constexpr bool kOneChain = true;
#if HWY_TARGET == HWY_SCALAR
    using DD = hn::Rebind<double, D>;  // one lane: no halves
#else
    using DD = hn::Repartition<double, D>;
#endif
    hn::Vec<DD> s0, s1;

    explicit ExpSumWide(D) : s0(hn::Zero(DD())), s1(s0) {}

    // Every lane, or (kMasked) the lanes of `valid` only.
    template <bool kMasked = false, class M = hn::Mask<D>>
    HWY_INLINE void add(D d, V x, V neg_max, M valid = M()) {
        const DD dd;
        const V hi = hn::Add(x, neg_max);
        V e = exp_f32<true>(d, hi, split_lo<kSplit>(x, neg_max, hi));
        if constexpr (kMasked)
            e = hn::IfThenElseZero(valid, e);
#if HWY_TARGET == HWY_SCALAR
        s0 = hn::Add(s0, hn::PromoteTo(dd, e));
#else
        const hn::Half<D> dh;
        s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LowerHalf(dh, e)));
        s1 = hn::Add(s1, hn::PromoteTo(dd, hn::UpperHalf(dh, e)));
#endif
    }

    // The sum less 1 (the ones are in it).
    HWY_INLINE double sum_less_one() const {
        return hn::GetLane(hn::SumOfLanes(DD(), hn::Add(s0, s1))) - 1.0;
    }
    // Each lane's sum less 1, lane j of x at t[j] (a column strip's lines).
    HWY_INLINE void store_less_one(double* t) const {
        const DD dd;
        hn::Store(hn::Sub(s0, hn::Set(dd, 1.0)), dd, t);
#if HWY_TARGET != HWY_SCALAR
        hn::Store(hn::Sub(s1, hn::Set(dd, 1.0)), dd, t + hn::Lanes(dd));
#endif
    }
};

// Whether a row of len elements, maximum mx and minimum mn (finite), sums in ExpSumWide.
// fl(mn - mx) >= -15 bounds every fl(x - max), as in sum_kind.
HWY_INLINE bool wide_sum(float mx, float mn, size_t len) {
    return mn - mx >= -kWideSpan && len <= kWideMaxLen;
}
// The same for every lane of a column strip.
HWY_INLINE bool wide_sum(D d, V mx, V mn, size_t len) {
    return len <= kWideMaxLen && hn::AllTrue(d, hn::Ge(hn::Sub(mn, mx), hn::Set(d, -kWideSpan)));
}

// Calls f with an ExpSumWide value of the split.
template <class F>
HWY_INLINE void with_wide_sum(D d, Split split, F&& f) {
    if (split == Split::kMaxLarger)
        f(ExpSumWide<Split::kMaxLarger>(d));
    else if (split == Split::kXLarger)
        f(ExpSumWide<Split::kXLarger>(d));
    else
        f(ExpSumWide<Split::kMinMax>(d));
}

// Which ExpSum a line (or a vector of columns) takes, from its maximum and minimum: kDeep where
// the minimum is more than 87 below the maximum (or not finite, or a NaN), the cheaper Split where
// the signs allow. fl(min - max) >= -87 bounds every fl(x - max) (rounding is monotonic).
struct SumKind {
    Split split;
    bool deep;
};
HWY_INLINE SumKind sum_kind(D d, V mx, V mn) {
    const V neg = hn::Neg(mx);
    if (!hn::AllTrue(d, hn::Ge(hn::Add(mn, neg), hn::Set(d, -87.0f))))
        return {Split::kMinMax, true};
    if (hn::AllTrue(d, hn::And(hn::Ge(mx, hn::Zero(d)), hn::Ge(mn, neg))))
        return {Split::kMaxLarger, false};
    if (hn::AllTrue(d, hn::Le(mx, hn::Zero(d))))
        return {Split::kXLarger, false};
    return {Split::kMinMax, false};
}

// Calls f with an ExpSum type (a value of it) for the kind.
template <class F>
HWY_INLINE void with_exp_sum(D d, SumKind k, F&& f) {
    if (k.deep)
        f(ExpSum<Split::kMinMax, true>(d));
    else if (k.split == Split::kMaxLarger)
        f(ExpSum<Split::kMaxLarger, false>(d));
    else if (k.split == Split::kXLarger)
        f(ExpSum<Split::kXLarger, false>(d));
    else
        f(ExpSum<Split::kMinMax, false>(d));
}

// The terms ExpSum left out, in double: exp(x - max) of the elements more than 87 below the
// maximum along a strided line.
double deep_terms(const float* x, size_t len, size_t stride, float mx) {
    double t = 0;
    for (size_t k = 0; k < len; ++k)
        if (x[k * stride] - mx < -87.0f)
            t += std::exp(double(x[k * stride]) - mx);
    return t;
}

// The sum less 1 of a row's ExpSum pair: its lanes added in double (exact for the counts).
template <class E>
HWY_INLINE double sum_less_one(D d, const E& a, const E& b) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t n = hn::Lanes(d), dl = hn::Lanes(dd);
    alignas(HWY_MAX_BYTES) float v[4 * kMaxLanes];
    hn::Store(a.s, d, v);
    hn::Store(b.s, d, v + n);
    hn::Store(hn::Add(a.c, b.c), d, v + 2 * n);
    hn::Store(hn::Add(a.ones, b.ones), d, v + 3 * n);
    auto acc = hn::Zero(dd), ones = hn::Zero(dd);
    for (size_t k = 0; k < 3 * n; k += dl)
        acc = hn::Add(acc, hn::PromoteTo(dd, hn::Load(dh, v + k)));
    for (size_t k = 3 * n; k < 4 * n; k += dl)
        ones = hn::Add(ones, hn::PromoteTo(dd, hn::Load(dh, v + k)));
    return hn::GetLane(hn::SumOfLanes(dd, acc)) + (hn::GetLane(hn::SumOfLanes(dd, ones)) - 1.0);
}
// log(sum) from t = sum - 1 >= 0, as a float pair hi + lo: log1p keeps L's relative precision
// when the other terms are tiny, and the pair carries it past float's rounding into
// y = (x - max) - L.
struct LogSum {
    float hi, lo;
};
HWY_INLINE LogSum log_sum_of(double t) {
    const hn::ScalableTag<double> dd;  // Highway's log1p, as the column strips take it
    const double l = hn::GetLane(hn::Log1p(dd, hn::Set(dd, t)));
    const float hi = static_cast<float>(l);
    return {hi, static_cast<float>(l - double(hi))};
}

// exp(x - max) along a row, less the maximum's 1 (sum_less_one), for ExpSum type E.
template <class E>
HWY_INLINE double row_sum_less_one(D d, const float* x, size_t len, float mx, E a) {
    const size_t n = hn::Lanes(d);
    const V vm = hn::Set(d, mx), neg = hn::Neg(vm);
    E second(d);
    E& b = E::kOneChain ? a : second;
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        a.add(d, hn::LoadU(d, x + i), neg);
        b.add(d, hn::LoadU(d, x + i + n), neg);
    }
    if (i + n <= len) {
        a.add(d, hn::LoadU(d, x + i), neg);
        i += n;
    }
    if (i < len) {
        // The missing lanes hold the maximum: a finite exp, dropped by the mask.
        const auto mask = tail_mask(d, i, len);
        b.template add<true>(d, hn::IfThenElse(mask, hn::MaskedLoad(mask, d, x + i), vm), neg,
                             mask);
    }
    double t;
    if constexpr (E::kOneChain)
        t = a.sum_less_one();
    else
        t = sum_less_one(d, a, b);
    if constexpr (E::kDeepLanes)
        if (HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(hn::Or(a.deep, b.deep)))))
            t += deep_terms(x, len, 1, mx);
    return t;
}

// Log-softmax of rows [rb, re) in float32 vectors, row by row: the maximum and minimum;
// exp(x - max) summed (ExpSumWide where the span allows, else ExpSum), the lanes added in double;
// L = log1p(sum - 1); C = max + L in double, as a float pair (C.hi = fl(C), C.lo the rest of
// max + L, L's low bits kept however large max is); y = (x - C.hi) - C.lo. x - C.hi is exact or
// has C.lo below its ULP, and y = x - max - L with x - max <= 0 <= L: no cancellation, two
// roundings where ((x - max) - L.hi) - L.lo took three, so y is within 1 ULP of the exact value
// (X86.LogSoftmaxWithinOneUlpOfExact; docs/x86-backend-log.md, "Log-softmax forward on AVX2"). L is
// taken for a group of rows at once, one row a lane of Highway's double Log1p: one call a row (a
// vector for one value, and its latency) took a fifth of the time of rows of 128.
void log_forward_rows(const float* x, ptrdiff_t xs, float* y, ptrdiff_t ys, size_t rb, size_t re,
                      size_t len) {
    const D d;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t n = hn::Lanes(d), dl = hn::Lanes(dd);
    // A multiple of every target's double lanes (at most 8).
    constexpr size_t kGroup = 8;
    static_assert(HWY_MAX_BYTES / sizeof(double) <= kGroup);
    alignas(HWY_MAX_BYTES) double t[kGroup];
    alignas(HWY_MAX_BYTES) float mx[kGroup], ch[kGroup], cl[kGroup];
    // Rows of 512 floats and more take one double vector of rows a group (4 on AVX2): eight rows
    // of 1000 (32 KiB) left Zen 3's L1 before their output pass (64x1000 1.5% faster).
    const size_t group = len >= 512 ? dl : kGroup;
    for (size_t g = rb; g < re; g += group) {
        const size_t rows = std::min(group, re - g);
        std::fill(t, t + kGroup, 0.0);
        std::fill(mx, mx + kGroup, 0.0f);
        for (size_t r = 0; r < rows; ++r) {
            const float* xr = x + static_cast<ptrdiff_t>(g + r) * xs;
            const MaxMin m = row_max_min(d, xr, len);
            mx[r] = m.max;
            if (!std::isfinite(m.max)) {
                t[r] = m.max;  // not finite: the row is redone below
                continue;
            }
            const SumKind k = sum_kind(d, hn::Set(d, m.max), hn::Set(d, m.min));
            auto sum = [&](auto a) { t[r] = row_sum_less_one(d, xr, len, m.max, a); };
            if (wide_sum(m.max, m.min, len))
                with_wide_sum(d, k.split, sum);
            else
                with_exp_sum(d, k, sum);
        }
        for (size_t r = 0; r < rows; r += dl) {
            const auto l = hn::Log1p(dd, hn::Load(dd, t + r));
            const auto m = hn::PromoteTo(dd, hn::Load(dh, mx + r));
            const auto hi = hn::DemoteTo(dh, hn::Add(m, l));
            hn::Store(hi, dh, ch + r);
            hn::Store(hn::DemoteTo(dh, hn::Add(hn::Sub(m, hn::PromoteTo(dd, hi)), l)), dh, cl + r);
        }
        for (size_t r = 0; r < rows; ++r) {
            const float* xr = x + static_cast<ptrdiff_t>(g + r) * xs;
            float* yr = y + static_cast<ptrdiff_t>(g + r) * ys;
            if (!std::isfinite(t[r])) {  // a NaN or an infinity
                scalar_forward(xr, yr, len, 1, true);
                continue;
            }
            const V vh = hn::Set(d, ch[r]), vl = hn::Set(d, cl[r]);
            size_t i = 0;
            for (; i + n <= len; i += n)
                hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, xr + i), vh), vl), d, yr + i);
            if (i < len) {
                const auto mask = tail_mask(d, i, len);
                V v = hn::Sub(hn::Sub(hn::MaskedLoad(mask, d, xr + i), vh), vl);
                hn::BlendedStore(v, mask, d, yr + i);
            }
        }
    }
}

void SoftmaxRows(const float* x, ptrdiff_t xs, float* y, ptrdiff_t ys, size_t rb, size_t re,
                 size_t len, bool log) {
    if (log) {
        log_forward_rows(x, xs, y, ys, rb, re, len);
        return;
    }
    for (size_t r = rb; r < re; ++r)
        forward_row(x + static_cast<ptrdiff_t>(r) * xs, y + static_cast<ptrdiff_t>(r) * ys, len);
}

// Columns: a (len, inner) slice, row k at x + k * inner, reduced down its columns. One vector of
// columns (a strip) at a time runs every pass down all len rows, its statistics in registers:
// blocks of 256 columns with the statistics on the stack loaded and stored them for every vector,
// and a block's 64 rows (64 KiB) left L1 between the passes. The strip's rows are its cache
// lines (AVX-512) or halves of them, the next strip's on AVX2. The last strip of a slice whose
// width is not a multiple of the vector takes its `count` columns under a mask (no scalar loop).

// The first `count` lanes at p (count <= Lanes), zeros after. AVX2's and AVX-512's masked loads
// and stores touch nothing past them; the emulated targets' would read (and BlendedStore
// rewrite) the whole vector, which another thread may be writing, so they go through a copy.
HWY_INLINE V load_first(D d, const float* p, size_t count) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    return hn::MaskedLoad(hn::FirstN(d, count), d, p);
#else
    alignas(HWY_MAX_BYTES) float b[kMaxLanes] = {};
    std::copy(p, p + count, b);
    return hn::Load(d, b);
#endif
}
HWY_INLINE void store_first(D d, V v, float* p, size_t count) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    hn::BlendedStore(v, hn::FirstN(d, count), d, p);
#else
    alignas(HWY_MAX_BYTES) float b[kMaxLanes];
    hn::Store(v, d, b);
    std::copy(b, b + count, p);
#endif
}

// A strip's rows: kPart, the first `count` lanes only (the others load 0 and are not stored).
template <bool kPart>
struct Strip {
    size_t inner, count;

    HWY_INLINE V load(D d, const float* p, size_t k) const {
        if constexpr (kPart)
            return load_first(d, p + k * inner, count);
        else
            return hn::LoadU(d, p + k * inner);
    }
    HWY_INLINE void store(D d, V v, float* p, size_t k) const {
        if constexpr (kPart)
            store_first(d, v, p + k * inner, count);
        else
            hn::StoreU(v, d, p + k * inner);
    }
};

// Each lane's maximum and minimum down the strip's len >= 1 rows (two chains each).
template <class S>
HWY_INLINE void strip_max_min(D d, const S& st, const float* x, size_t len, V& mx, V& mn) {
    V m0 = st.load(d, x, 0), m1 = m0, l0 = m0, l1 = m0;
    size_t k = 1;
    for (; k + 2 <= len; k += 2) {
        const V a = st.load(d, x, k), b = st.load(d, x, k + 1);
        m0 = hn::Max(m0, a);
        m1 = hn::Max(m1, b);
        l0 = hn::Min(l0, a);
        l1 = hn::Min(l1, b);
    }
    if (k < len) {
        const V a = st.load(d, x, k);
        m0 = hn::Max(m0, a);
        l0 = hn::Min(l0, a);
    }
    mx = hn::Max(m0, m1);
    mn = hn::Min(l0, l1);
}

// Softmax down one strip: the maximum; exp(x - max) stored and summed; y scaled by 1 / sum. A
// line holding a NaN or +inf, or only -inf, gets NaN throughout from the arithmetic itself (a NaN
// term, or inf - inf), as naive gives it; no lane is redone (nor in log_softmax_strip).
template <class S>
void softmax_strip(const S& st, const float* x, float* y, size_t len) {
    const D d;
    V mx = st.load(d, x, 0), sum = hn::Zero(d);
    for (size_t k = 1; k < len; ++k)
        mx = hn::Max(mx, st.load(d, x, k));
    // One row per iteration: unrolled by two rows (two inlined exp_nonpositive, each with its
    // scalar branch) it took 1.15x the time.
    for (size_t k = 0; k < len; ++k) {
        const V e = exp_nonpositive(d, hn::Sub(st.load(d, x, k), mx));
        st.store(d, e, y, k);
        sum = hn::Add(sum, e);
    }
    const V r = hn::Div(hn::Set(d, 1.0f), sum);
    for (size_t k = 0; k < len; ++k)
        st.store(d, hn::Mul(st.load(d, y, k), r), y, k);
}

// Log-softmax down one strip, as the rows (log_forward_row) lane by lane: the maximum and
// minimum; ExpSumWide where every lane's span allows, else ExpSum of the kind they allow; per lane
// L = log1p(sum - 1) in double, the float pair of max + L; y = (x - C.hi) - C.lo.
template <class S>
void log_softmax_strip(const S& st, const float* x, float* y, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    V mx, mn;
    strip_max_min(d, st, x, len, mx, mn);
    const V neg = hn::Neg(mx);
    alignas(HWY_MAX_BYTES) float s[kMaxLanes], c[kMaxLanes], o[kMaxLanes], m[kMaxLanes];
    alignas(HWY_MAX_BYTES) double t[kMaxLanes];
    hn::Store(mx, d, m);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t dl = hn::Lanes(dd);
    const SumKind kind = sum_kind(d, mx, mn);
    if (wide_sum(d, mx, mn, len)) {
        with_wide_sum(d, kind.split, [&](auto a) {
            for (size_t k = 0; k < len; ++k)
                a.add(d, st.load(d, x, k), neg);
            a.store_less_one(t);
        });
    } else {
        bool any_deep = false;
        with_exp_sum(d, kind, [&](auto a) {
            for (size_t k = 0; k < len; ++k)
                a.add(d, st.load(d, x, k), neg);
            hn::Store(a.s, d, s);
            hn::Store(a.c, d, c);
            hn::Store(a.ones, d, o);
            any_deep = !hn::AllFalse(d, hn::MaskFromVec(a.deep));
        });
        for (size_t j = 0; j < n; j += dl) {
            auto v = hn::Add(hn::Add(hn::PromoteTo(dd, hn::Load(dh, s + j)),
                                     hn::PromoteTo(dd, hn::Load(dh, c + j))),
                             hn::Sub(hn::PromoteTo(dd, hn::Load(dh, o + j)), hn::Set(dd, 1.0)));
            hn::Store(v, dd, t + j);
        }
        if (HWY_UNLIKELY(any_deep))
            for (size_t j = 0; j < st.count; ++j)
                t[j] += deep_terms(x + j, len, st.inner, m[j]);
    }
    // max + L's pair into s and c (NaN for a line holding a NaN or +inf, or only -inf), as
    // log_forward_rows takes it.
    for (size_t j = 0; j < n; j += dl) {
        const auto l = hn::Log1p(dd, hn::Load(dd, t + j));
        const auto mj = hn::PromoteTo(dd, hn::Load(dh, m + j));
        const auto hi = hn::DemoteTo(dh, hn::Add(mj, l));
        hn::Store(hi, dh, s + j);
        hn::Store(hn::DemoteTo(dh, hn::Add(hn::Sub(mj, hn::PromoteTo(dd, hi)), l)), dh, c + j);
    }
    const V vh = hn::Load(d, s), vl = hn::Load(d, c);
    for (size_t k = 0; k < len; ++k)
        st.store(d, hn::Sub(hn::Sub(st.load(d, x, k), vh), vl), y, k);
}

// Columns [cb, ce) of the slice: whole strips, then the last partial one.
template <class F>
HWY_INLINE void for_each_strip(D d, size_t inner, size_t cb, size_t ce, F&& f) {
    const size_t n = hn::Lanes(d);
    size_t j = cb;
    for (; j + n <= ce; j += n)
        f(Strip<false>{inner, n}, j);
    if (j < ce)
        f(Strip<true>{inner, ce - j}, j);
}

void SoftmaxCols(const float* x, float* y, size_t len, size_t inner, size_t cb, size_t ce,
                 bool log) {
    for_each_strip(D(), inner, cb, ce, [&](const auto& st, size_t j) {
        if (log)
            log_softmax_strip(st, x + j, y + j, len);
        else
            softmax_strip(st, x + j, y + j, len);
    });
}

// softmax: dx = y (dy - sum(dy y)); log-softmax: dx = dy - exp(y) sum(dy).
template <bool kLog>
void grad_row(const float* y, const float* dy, float* dx, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    // dy y, or dy alone, of a vector; the tail's missing lanes load 0.
    auto term = [&](V g, V v, V acc) { return kLog ? hn::Add(acc, g) : hn::MulAdd(g, v, acc); };
    V a0 = hn::Zero(d), a1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        a0 = term(hn::LoadU(d, dy + i), hn::LoadU(d, y + i), a0);
        a1 = term(hn::LoadU(d, dy + i + n), hn::LoadU(d, y + i + n), a1);
    }
    if (i + n <= len) {
        a0 = term(hn::LoadU(d, dy + i), hn::LoadU(d, y + i), a0);
        i += n;
    }
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        a1 = term(hn::MaskedLoad(mask, d, dy + i), hn::MaskedLoad(mask, d, y + i), a1);
    }
    const V va = hn::Set(d, hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1))));
    // Log-softmax: exp_f32 in the loop, and the row redone with exp_lanes when a lane fell outside
    // its range: std::exp inside the loop made GCC keep every constant in memory (1.5x the time).
    V outside = hn::Zero(d);
    auto out = [&](V g, V v, auto exp) {
        if constexpr (!kLog)
            return hn::Mul(v, hn::Sub(g, va));
        else
            return hn::NegMulAdd(exp(v), va, g);
    };
    auto fast = [&](V v) {
        outside = hn::Or(outside, hn::VecFromMask(d, ExpF().special(d, &v)));
        return exp_f32<false>(d, v, v);
    };
    auto exact = [&](V v) { return exp_lanes(d, v); };
    auto second_pass = [&](auto exp) {
        size_t k = 0;
        for (; k + n <= len; k += n)
            hn::StoreU(out(hn::LoadU(d, dy + k), hn::LoadU(d, y + k), exp), d, dx + k);
        if (k < len) {
            const auto mask = tail_mask(d, k, len);
            V r = out(hn::MaskedLoad(mask, d, dy + k), hn::MaskedLoad(mask, d, y + k), exp);
            hn::BlendedStore(r, mask, d, dx + k);
        }
    };
    second_pass(fast);
    if (kLog && HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(outside))))
        second_pass(exact);
}

void SoftmaxGradRows(const float* y, ptrdiff_t ys, const float* dy, ptrdiff_t dys, float* dx,
                     ptrdiff_t dxs, size_t rb, size_t re, size_t len, bool log) {
    for (size_t r = rb; r < re; ++r) {
        const auto k = static_cast<ptrdiff_t>(r);
        (log ? grad_row<true> : grad_row<false>)(y + k * ys, dy + k * dys, dx + k * dxs, len);
    }
}

// The backward down one strip, as grad_row lane by lane: sum(dy y) or sum(dy), then dx.
template <bool kLog, class S>
void grad_strip(const S& st, const float* y, const float* dy, float* dx, size_t len) {
    const D d;
    V a0 = hn::Zero(d), a1 = a0;
    size_t k = 0;
    for (; k + 2 <= len; k += 2) {
        const V g0 = st.load(d, dy, k), g1 = st.load(d, dy, k + 1);
        a0 = kLog ? hn::Add(a0, g0) : hn::MulAdd(g0, st.load(d, y, k), a0);
        a1 = kLog ? hn::Add(a1, g1) : hn::MulAdd(g1, st.load(d, y, k + 1), a1);
    }
    if (k < len) {
        const V g = st.load(d, dy, k);
        a0 = kLog ? hn::Add(a0, g) : hn::MulAdd(g, st.load(d, y, k), a0);
    }
    const V acc = hn::Add(a0, a1);
    // As grad_row: the log's exp by exp_f32 in the loop, the strip redone with exp_lanes when a
    // lane left its range.
    V outside = hn::Zero(d);
    auto second_pass = [&](auto exp) {
        for (size_t i = 0; i < len; ++i) {
            const V g = st.load(d, dy, i), v = st.load(d, y, i);
            st.store(d, kLog ? hn::NegMulAdd(exp(v), acc, g) : hn::Mul(v, hn::Sub(g, acc)), dx, i);
        }
    };
    second_pass([&](V v) {
        if constexpr (kLog)
            outside = hn::Or(outside, hn::VecFromMask(d, ExpF().special(d, &v)));
        return exp_f32<false>(d, v, v);
    });
    if (kLog && HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(outside))))
        second_pass([&](V v) { return exp_lanes(d, v); });
}

// The backward down kW whole vectors of columns side by side, as grad_strip: per row kW
// neighbouring vectors (up to 4 cache lines). Against one vector a strip, 1.1x faster for softmax
// 8x64x28x28 axis 1 (two vectors) and for log-softmax's (four), 1.6x for 1000x64 axis 0 (four),
// whose 1000 rows 256 bytes apart fall into a quarter of L1's sets: one line a row came from L2
// in every pass.
template <bool kLog, size_t kW>
void grad_strip_w(size_t inner, const float* y, const float* dy, float* dx, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    V acc[kW];
    for (size_t w = 0; w < kW; ++w)
        acc[w] = hn::Zero(d);
    for (size_t k = 0; k < len; ++k)
        for (size_t w = 0; w < kW; ++w) {
            const size_t o = k * inner + w * n;
            const V g = hn::LoadU(d, dy + o);
            acc[w] = kLog ? hn::Add(acc[w], g) : hn::MulAdd(g, hn::LoadU(d, y + o), acc[w]);
        }
    V outside = hn::Zero(d);
    auto second_pass = [&](auto exp) {
        for (size_t k = 0; k < len; ++k)
            for (size_t w = 0; w < kW; ++w) {
                const size_t o = k * inner + w * n;
                const V g = hn::LoadU(d, dy + o), v = hn::LoadU(d, y + o);
                const V r =
                        kLog ? hn::NegMulAdd(exp(v), acc[w], g) : hn::Mul(v, hn::Sub(g, acc[w]));
                hn::StoreU(r, d, dx + o);
            }
    };
    second_pass([&](V v) {
        if constexpr (kLog)
            outside = hn::Or(outside, hn::VecFromMask(d, ExpF().special(d, &v)));
        return exp_f32<false>(d, v, v);
    });
    if (kLog && HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(outside))))
        second_pass([&](V v) { return exp_lanes(d, v); });
}

template <bool kLog>
void grad_cols(const float* y, const float* dy, float* dx, size_t len, size_t inner, size_t cb,
               size_t ce) {
    const size_t n = hn::Lanes(D());
    size_t j = cb;
    if (kLog || len > 256) {
        for (; j + 4 * n <= ce; j += 4 * n)
            grad_strip_w<kLog, 4>(inner, y + j, dy + j, dx + j, len);
    } else {
        for (; j + 2 * n <= ce; j += 2 * n)
            grad_strip_w<kLog, 2>(inner, y + j, dy + j, dx + j, len);
    }
    for_each_strip(D(), inner, j, ce, [&](const auto& st, size_t i) {
        grad_strip<kLog>(st, y + i, dy + i, dx + i, len);
    });
}

void SoftmaxGradCols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                     size_t cb, size_t ce, bool log) {
    (log ? grad_cols<true> : grad_cols<false>)(y, dy, dx, len, inner, cb, ce);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(SoftmaxCols);
HWY_EXPORT(SoftmaxGradRows);
HWY_EXPORT(SoftmaxGradCols);

void softmax_rows(const float* x, ptrdiff_t x_row, float* y, ptrdiff_t y_row, size_t row_begin,
                  size_t row_end, size_t len, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x, x_row, y, y_row, row_begin, row_end, len, log);
}

void softmax_cols(const float* x, float* y, size_t len, size_t inner, size_t col_begin,
                  size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxCols)(x, y, len, inner, col_begin, col_end, log);
}

void softmax_grad_rows(const float* y, ptrdiff_t y_row, const float* dy, ptrdiff_t dy_row,
                       float* dx, ptrdiff_t dx_row, size_t row_begin, size_t row_end, size_t len,
                       bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradRows)
    (y, y_row, dy, dy_row, dx, dx_row, row_begin, row_end, len, log);
}

void softmax_grad_cols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                       size_t col_begin, size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradCols)(y, dy, dx, len, inner, col_begin, col_end, log);
}

}  // namespace neomeg::dnn::x86
#endif
