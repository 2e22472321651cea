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

// The row's maximum: -inf lanes stand for the tail's missing elements. A NaN may be dropped by
// Max; the sum that follows catches it.
HWY_INLINE float row_max(D d, const float* x, size_t len) {
    const size_t n = hn::Lanes(d);
    const V lowest = hn::Set(d, -kInf);
    V m0 = lowest, m1 = lowest;
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        m0 = hn::Max(m0, hn::LoadU(d, x + i));
        m1 = hn::Max(m1, hn::LoadU(d, x + i + n));
    }
    if (i + n <= len) {
        m0 = hn::Max(m0, hn::LoadU(d, x + i));
        i += n;
    }
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        m1 = hn::Max(m1, hn::IfThenElse(mask, hn::MaskedLoad(mask, d, x + i), lowest));
    }
    return hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
}

// x - max for the tail's lanes, 0 (exp 1, then masked off) for the missing ones: no lane reaches
// exp_nonpositive's scalar path for want of an element.
HWY_INLINE V tail_diff(D d, const float* x, V vm, hn::Mask<D> mask) {
    return hn::IfThenElseZero(mask, hn::Sub(hn::MaskedLoad(mask, d, x), vm));
}

void forward_row(const float* x, float* y, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    const float mx = row_max(d, x, len);
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

// exp(x - max) summed for log-softmax, whose log1p wants the sum less 1: the lanes where x is the
// maximum (exp exactly 1) are counted in `ones`, the other terms summed in s with TwoSum's error
// terms in c. Summing the 1 with them, in float or double, would leave log(sum) an absolute error
// of the sum's rounding, far from a tiny log(sum)'s precision (a confident classifier's loss:
// naive's double sum puts it thousands of ULPs off). x - max is taken exactly, as a float pair,
// for the same reason: its rounding (up to 2^-20 for logits about 30) is a relative error of its
// exp. Lanes below exp_f32's range (subnormal terms, -inf) are left out and flagged in `deep`,
// for deep_terms after the loop: a call to std::exp inside it made GCC keep the accumulators in
// memory, whose store-to-load latency then bound the loop.
struct ExpSum {
    V s, c, ones, deep;

    explicit ExpSum(D d) : s(hn::Zero(d)), c(s), ones(s), deep(s) {}

    // Every lane, or (kMasked) the lanes of `valid` only.
    template <bool kMasked = false, class M = hn::Mask<D>>
    HWY_INLINE void add(D d, V x, V neg_max, M valid = M()) {
        const V hi = hn::Add(x, neg_max), z = hn::Sub(hi, x);
        const V lo = hn::Add(hn::Sub(x, hn::Sub(hi, z)), hn::Sub(neg_max, z));
        auto top = hn::Eq(hi, hn::Zero(d));
        auto below = hn::Lt(hi, hn::Set(d, -87.0f));
        auto skip = hn::Or(top, below);
        if constexpr (kMasked) {
            top = hn::And(top, valid);
            below = hn::And(below, valid);
            skip = hn::Or(skip, hn::Not(valid));
        }
        ones = hn::Add(ones, hn::IfThenElseZero(top, hn::Set(d, 1.0f)));
        deep = hn::Or(deep, hn::VecFromMask(d, below));
        two_sum_add(s, c, hn::IfThenZeroElse(skip, exp_f32<true>(d, hi, lo)));
    }
};

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
HWY_INLINE double sum_less_one(D d, const ExpSum& a, const ExpSum& b) {
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
    const hn::ScalableTag<double> dd;  // Highway's log1p, as the column blocks take it
    const double l = hn::GetLane(hn::Log1p(dd, hn::Set(dd, t)));
    const float hi = static_cast<float>(l);
    return {hi, static_cast<float>(l - double(hi))};
}

// Log-softmax of one row in float32 vectors: the maximum; exp(x - max) summed (ExpSum), the lanes
// added in double; L = log1p(sum - 1); y = ((x - max) - L.hi) - L.lo. x - max <= 0 <= L: no
// cancellation, so y is within 1 ULP of the exact value (X86.LogSoftmaxWithinOneUlpOfExact,
// docs/x86-backend.md).
void log_forward_row(const float* x, float* y, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    const float mx = row_max(d, x, len);
    if (!std::isfinite(mx)) {
        scalar_forward(x, y, len, 1, true);
        return;
    }
    const V vm = hn::Set(d, mx), neg = hn::Neg(vm);
    ExpSum a(d), b(d);
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
        b.add<true>(d, hn::IfThenElse(mask, hn::MaskedLoad(mask, d, x + i), vm), neg, mask);
    }
    double t = sum_less_one(d, a, b);
    if (HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(hn::Or(a.deep, b.deep)))))
        t += deep_terms(x, len, 1, mx);
    if (!std::isfinite(t)) {  // a NaN
        scalar_forward(x, y, len, 1, true);
        return;
    }
    const LogSum l = log_sum_of(t);
    const V vh = hn::Set(d, l.hi), vl = hn::Set(d, l.lo);
    for (i = 0; i + n <= len; i += n)
        hn::StoreU(hn::Sub(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vm), vh), vl), d, y + i);
    if (i < len) {
        const auto mask = tail_mask(d, i, len);
        V v = hn::Sub(hn::Sub(hn::Sub(hn::MaskedLoad(mask, d, x + i), vm), vh), vl);
        hn::BlendedStore(v, mask, d, y + i);
    }
}

void SoftmaxRows(const float* x, float* y, size_t rb, size_t re, size_t len, bool log) {
    for (size_t r = rb; r < re; ++r)
        (log ? log_forward_row : forward_row)(x + r * len, y + r * len, len);
}

// The maximum of each column of [x, x + w) down `len` rows of stride `inner`, into m.
void column_max(const float* x, size_t len, size_t inner, size_t w, float* m) {
    const D d;
    const size_t n = hn::Lanes(d);
    std::fill(m, m + w, -kInf);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n)
            hn::Store(hn::Max(hn::Load(d, m + j), hn::LoadU(d, xr + j)), d, m + j);
        for (; j < w; ++j)
            m[j] = std::max(m[j], xr[j]);
    }
}

// Softmax down w columns from x (y): per column statistics on the stack, rows streamed.
void softmax_columns(const float* x, float* y, size_t len, size_t inner, size_t w) {
    const D d;
    const size_t n = hn::Lanes(d);
    alignas(HWY_MAX_BYTES) float m[kSoftmaxColumns], s[kSoftmaxColumns];
    column_max(x, len, inner, w, m);
    std::fill(s, s + w, 0.0f);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        float* yr = y + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            V e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, xr + j), hn::Load(d, m + j)));
            hn::StoreU(e, d, yr + j);
            hn::Store(hn::Add(hn::Load(d, s + j), e), d, s + j);
        }
        for (; j < w; ++j) {
            yr[j] = std::exp(xr[j] - m[j]);
            s[j] += yr[j];
        }
    }
    for (size_t j = 0; j < w; ++j)
        s[j] = 1.0f / s[j];
    for (size_t k = 0; k < len; ++k) {
        float* yr = y + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n)
            hn::StoreU(hn::Mul(hn::LoadU(d, yr + j), hn::Load(d, s + j)), d, yr + j);
        for (; j < w; ++j)
            yr[j] *= s[j];
    }
    for (size_t j = 0; j < w; ++j)
        if (!std::isfinite(m[j]) || !std::isfinite(s[j]))
            scalar_forward(x + j, y + j, len, inner, false);
}

// Log-softmax down w columns, as the rows (log_forward_row): per column the maximum, ExpSum's
// (s, c, ones) on the stack, L = log1p(s + c + ones - 1) in double vectors and its float pair.
void log_softmax_columns(const float* x, float* y, size_t len, size_t inner, size_t w) {
    const D d;
    const size_t n = hn::Lanes(d);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t dl = hn::Lanes(dd);
    alignas(HWY_MAX_BYTES) float m[kSoftmaxColumns], s[kSoftmaxColumns], c[kSoftmaxColumns],
            o[kSoftmaxColumns];
    alignas(HWY_MAX_BYTES) double deep[kSoftmaxColumns];
    V any_deep = hn::Zero(d);
    column_max(x, len, inner, w, m);
    std::fill(s, s + w, 0.0f);
    std::fill(c, c + w, 0.0f);
    std::fill(o, o + w, 0.0f);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            ExpSum a(d);
            a.s = hn::Load(d, s + j);
            a.c = hn::Load(d, c + j);
            a.ones = hn::Load(d, o + j);
            a.add(d, hn::LoadU(d, xr + j), hn::Neg(hn::Load(d, m + j)));
            hn::Store(a.s, d, s + j);
            hn::Store(a.c, d, c + j);
            hn::Store(a.ones, d, o + j);
            any_deep = hn::Or(any_deep, a.deep);
        }
        for (; j < w; ++j) {
            if (xr[j] == m[j]) {
                o[j] += 1;
                continue;
            }
            const float e = static_cast<float>(std::exp(double(xr[j]) - m[j]));
            const float t = s[j] + e, z = t - s[j];
            c[j] += (s[j] - (t - z)) + (e - z);
            s[j] = t;
        }
    }
    // The vector columns' left-out terms (the scalar ones summed all theirs).
    const bool vector_deep = !hn::AllFalse(d, hn::MaskFromVec(any_deep));
    for (size_t j = 0; j < w; ++j)
        deep[j] = vector_deep && j < w / n * n ? deep_terms(x + j, len, inner, m[j]) : 0.0;
    // s and c become L's pair; a column whose sum is not finite (a NaN) or whose maximum is not is
    // redone below.
    size_t j = 0;
    for (; j + dl <= w; j += dl) {
        auto t = hn::Add(hn::Add(hn::PromoteTo(dd, hn::Load(dh, s + j)),
                                 hn::PromoteTo(dd, hn::Load(dh, c + j))),
                         hn::Sub(hn::PromoteTo(dd, hn::Load(dh, o + j)), hn::Set(dd, 1.0)));
        t = hn::Add(t, hn::Load(dd, deep + j));
        auto l = hn::Log1p(dd, t);
        auto hi = hn::DemoteTo(dh, l);
        hn::Store(hi, dh, s + j);
        hn::Store(hn::DemoteTo(dh, hn::Sub(l, hn::PromoteTo(dd, hi))), dh, c + j);
    }
    for (; j < w; ++j) {
        const LogSum l = log_sum_of((double(s[j]) + double(c[j])) + (double(o[j]) - 1.0) + deep[j]);
        s[j] = l.hi;
        c[j] = l.lo;
    }
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        float* yr = y + k * inner;
        j = 0;
        for (; j + n <= w; j += n) {
            V v = hn::Sub(hn::LoadU(d, xr + j), hn::Load(d, m + j));
            v = hn::Sub(hn::Sub(v, hn::Load(d, s + j)), hn::Load(d, c + j));
            hn::StoreU(v, d, yr + j);
        }
        for (; j < w; ++j)
            yr[j] = ((xr[j] - m[j]) - s[j]) - c[j];
    }
    for (j = 0; j < w; ++j)
        if (!std::isfinite(m[j]) || !std::isfinite(s[j]))
            scalar_forward(x + j, y + j, len, inner, true);
}

void SoftmaxCols(const float* x, float* y, size_t len, size_t inner, size_t cb, size_t ce,
                 bool log) {
    if (log)
        log_softmax_columns(x + cb, y + cb, len, inner, ce - cb);
    else
        softmax_columns(x + cb, y + cb, len, inner, ce - cb);
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

void SoftmaxGradRows(const float* y, const float* dy, float* dx, size_t rb, size_t re, size_t len,
                     bool log) {
    for (size_t r = rb; r < re; ++r)
        (log ? grad_row<true> : grad_row<false>)(y + r * len, dy + r * len, dx + r * len, len);
}

void SoftmaxGradCols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                     size_t cb, size_t ce, bool log) {
    const D d;
    const size_t n = hn::Lanes(d), w = ce - cb;
    alignas(HWY_MAX_BYTES) float a[kSoftmaxColumns];
    std::fill(a, a + w, 0.0f);
    y += cb;
    dy += cb;
    dx += cb;
    for (size_t k = 0; k < len; ++k) {
        const float *yr = y + k * inner, *gr = dy + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            V g = hn::LoadU(d, gr + j), acc = hn::Load(d, a + j);
            acc = log ? hn::Add(acc, g) : hn::MulAdd(g, hn::LoadU(d, yr + j), acc);
            hn::Store(acc, d, a + j);
        }
        for (; j < w; ++j)
            a[j] += log ? gr[j] : gr[j] * yr[j];
    }
    // As grad_row: the log's exp by exp_f32 in the loop, the block redone with exp_lanes when a
    // lane left its range.
    V outside = hn::Zero(d);
    auto second_pass = [&](auto exp) {
        for (size_t k = 0; k < len; ++k) {
            const float *yr = y + k * inner, *gr = dy + k * inner;
            float* xr = dx + k * inner;
            size_t j = 0;
            for (; j + n <= w; j += n) {
                V g = hn::LoadU(d, gr + j), v = hn::LoadU(d, yr + j), acc = hn::Load(d, a + j);
                V r = log ? hn::NegMulAdd(exp(v), acc, g) : hn::Mul(v, hn::Sub(g, acc));
                hn::StoreU(r, d, xr + j);
            }
            for (; j < w; ++j)
                xr[j] = log ? gr[j] - std::exp(yr[j]) * a[j] : yr[j] * (gr[j] - a[j]);
        }
    };
    second_pass([&](V v) {
        outside = hn::Or(outside, hn::VecFromMask(d, ExpF().special(d, &v)));
        return exp_f32<false>(d, v, v);
    });
    if (log && HWY_UNLIKELY(!hn::AllFalse(d, hn::MaskFromVec(outside))))
        second_pass([&](V v) { return exp_lanes(d, v); });
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(SoftmaxCols);
HWY_EXPORT(SoftmaxGradRows);
HWY_EXPORT(SoftmaxGradCols);

void softmax_rows(const float* x, float* y, size_t row_begin, size_t row_end, size_t len,
                  bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x, y, row_begin, row_end, len, log);
}

void softmax_cols(const float* x, float* y, size_t len, size_t inner, size_t col_begin,
                  size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxCols)(x, y, len, inner, col_begin, col_end, log);
}

void softmax_grad_rows(const float* y, const float* dy, float* dx, size_t row_begin, size_t row_end,
                       size_t len, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradRows)(y, dy, dx, row_begin, row_end, len, log);
}

void softmax_grad_cols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                       size_t col_begin, size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradCols)(y, dy, dx, len, inner, col_begin, col_end, log);
}

}  // namespace neomeg::dnn::x86
#endif
