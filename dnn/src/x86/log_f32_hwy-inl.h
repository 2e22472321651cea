// LOG, LOG1P, EXPM1, ATANH, SOFTPLUS and LOGSIGMOID in float32 lanes, for elemwise_math_hwy.cpp
// (issue 12: in double lanes with Highway's double log1p and exp they ran at 0.5x to 0.9x
// PyTorch's SLEEF-based float loops). Each is within a few float ULPs of naive's double formula
// rounded once (elemwise_f32_max_ulp), measured on every float32 input (dnn/bench/elemwise_ulp.cpp)
// at the AVX-512 and AVX2 targets. Included once per target after exp_f32_hwy-inl.h, like
// Highway's own -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_LOG_F32_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_LOG_F32_HWY_INL_H_
#undef NEOMEG_X86_LOG_F32_HWY_INL_H_
#else
#define NEOMEG_X86_LOG_F32_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include "src/x86/exp_f32_hwy-inl.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// log(1 + f) = f - f^2 / 2 + f^3 P(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: Cephes' logf
// polynomial (degree 8, 7.6e-8 relative for the whole logf), lowest degree first.
constexpr float kLogP[] = {3.3333331174e-1f,  -2.4999993993e-1f, 2.0000714765e-1f,
                           -1.6668057665e-1f, 1.4249322787e-1f,  -1.2420140846e-1f,
                           1.1676998740e-1f,  -1.1514610310e-1f, 7.0376836292e-2f};
// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi of 9 significant bits: k kLn2Hi is exact for |k| <= 2^15.
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;

// log(u + c) for a positive normal float u and a correction c with |c| <= ulp(u) / 2 (the
// rounding error of the sum u stands for; kCorrect false: c = 0), as k ln 2 + f + y with k and
// f returned through `k` and `f`: u = 2^k m with m in [sqrt(1/2), sqrt(2)) through the exponent
// bits, f = m - 1 (exact), and log(u + c) = k ln 2 + log(1 + f) + c / u, the last term exact enough
// from one division (it is below 2^-24 of u, so its own rounding is 2^-48 of the result). y holds
// the small terms, summed from the smallest up, and k kLn2Lo.
template <bool kCorrect, class D, class V>
HWY_INLINE V log_f32_parts(D d, V u, V c, V& k, V& f) {
    const hn::RebindToSigned<D> di;
    // 0x3F3504F3 is sqrt(1/2)'s bits: shifting u's by 1.0's less these puts the exponent's
    // boundary at m = sqrt(1/2).
    const auto bits = hn::Add(hn::BitCast(di, u), hn::Set(di, 0x3F800000 - 0x3F3504F3));
    k = hn::ConvertTo(d, hn::Sub(hn::ShiftRight<23>(bits), hn::Set(di, 127)));
    const V m =
            hn::BitCast(d, hn::Add(hn::And(bits, hn::Set(di, 0x7FFFFF)), hn::Set(di, 0x3F3504F3)));
    f = hn::Sub(m, hn::Set(d, 1.0f));
    const V z = hn::Mul(f, f);
    V p = hn::Set(d, kLogP[8]);
    for (size_t i = 8; i-- > 0;)
        p = hn::MulAdd(p, f, hn::Set(d, kLogP[i]));
    V y = hn::Mul(hn::Mul(f, z), p);
    y = hn::MulAdd(z, hn::Set(d, -0.5f), y);
    if constexpr (kCorrect)
        y = hn::Add(y, hn::Div(c, u));
    return hn::MulAdd(k, hn::Set(d, kLn2Lo), y);
}

// log(u + c) as log_f32_parts, the largest term (k kLn2Hi) added last, so that the result is
// rounded once more than f^2 P.
template <bool kCorrect, class D, class V>
HWY_INLINE V log_f32(D d, V u, V c) {
    V k, f;
    const V y = log_f32_parts<kCorrect>(d, u, c, k, f);
    return hn::MulAdd(k, hn::Set(d, kLn2Hi), hn::Add(f, y));
}

// log(u + c) as hi + lo, log_f32's two last roundings kept in lo (Knuth's two-sum for f + y, whose
// f may be the smaller, at zero; Fast2Sum for k kLn2Hi + that sum, k kLn2Hi exact and either zero
// or above 0.69 > |f + y|): off by log_f32_parts' own error, about 2^-24 of log(1 + f), where
// log_f32 adds up to half an ULP of the result. For ERFINV's w (elemwise_math_hwy.cpp).
template <class D, class V>
HWY_INLINE V log_f32_pair(D d, V u, V c, V& lo) {
    V k, f;
    const V y = log_f32_parts<true>(d, u, c, k, f);
    const V g = hn::Add(f, y);
    const V gy = hn::Sub(g, f);
    const V eg = hn::Add(hn::Sub(f, hn::Sub(g, gy)), hn::Sub(y, gy));
    const V t = hn::Mul(k, hn::Set(d, kLn2Hi));
    const V hi = hn::Add(t, g);
    lo = hn::Add(hn::Add(hn::Sub(t, hi), g), eg);
    return hi;
}

// log1p(x) for finite x > -1: u = 1 + x and its rounding error c by Knuth's two-sum (exact for
// any x), then log_f32(u, c); u >= 2^-24 is normal. x = 0 keeps its sign (the two-sum's error
// of -0 is +0).
template <class D, class V>
HWY_INLINE V log1p_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    const V u = hn::Add(one, x);
    const V b = hn::Sub(u, one);
    const V c = hn::Add(hn::Sub(one, hn::Sub(u, b)), hn::Sub(x, b));
    return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, log_f32<true>(d, u, c));
}

// log1p(e) for e in (0, 1]: 1 >= e, so the error of u = 1 + e is e - (u - 1) (Fast2Sum).
template <class D, class V>
HWY_INLINE V log1p_small_f32(D d, V e) {
    const V one = hn::Set(d, 1.0f);
    const V u = hn::Add(one, e);
    return log_f32<true>(d, u, hn::Sub(e, hn::Sub(u, one)));
}

struct LogF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return log_f32<false>(d, x, x);
    }
    // Zero, negative, subnormal, infinite and NaN x take naive's formula.
    template <class D, class V>
    auto special(D d, const V* x) const {
        const auto normal = hn::And(hn::Ge(x[0], hn::Set(d, 1.17549435e-38f)),
                                    hn::Le(x[0], hn::Set(d, 3.40282347e38f)));
        return hn::Not(normal);
    }
};

struct Log1pF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return log1p_f32(d, x);
    }
    // x <= -1, infinities and NaN take naive's formula.
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(
                hn::And(hn::Gt(x[0], hn::Set(d, -1.0f)), hn::Le(x[0], hn::Set(d, 3.40282347e38f))));
    }
};

// atanh(x) = (log1p(a) - log1p(-a)) / 2 with x's sign, a = |x| < 1: the two logarithms have
// opposite signs, so their difference cancels nothing, and each keeps its relative accuracy
// (1 - a is exact from a = 1/2 up, and log1p_f32 carries 1 + a's rounding). |x| >= 1 and NaN take
// naive's formula.
struct AtanhF {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V a = hn::Abs(x);
        const V r = hn::Mul(hn::Sub(log1p_f32(d, a), log1p_f32(d, hn::Neg(a))), hn::Set(d, 0.5f));
        return hn::CopySign(r, x);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Lt(hn::Abs(x[0]), hn::Set(d, 1.0f)));
    }
};

// expm1(x) for x in [-87, 88]: exp_f32's reduction x = n ln 2 + r, |r| <= ln 2 / 2, and its
// polynomial less the 1, q = expm1(r) = r + r^2 P(r), then expm1(x) = 2^n q + (2^n - 1) by one FMA
// (2^n - 1 is exact for |n| <= 24; past 24 its rounding is below 2^-25 of the result). Also ERF's
// 1 - exp(-b) (elemwise_math_hwy.cpp), whose 1 this keeps out of the rounded exponential.
template <class D, class V>
HWY_INLINE V expm1_f32(D d, V x) {
    const hn::RebindToSigned<D> di;
    const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
    const V t = hn::MulAdd(x, hn::Set(d, 1.442695040888963407359924681f), magic);
    const V n = hn::Sub(t, magic);
    V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), x);
    r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
    const V q = hn::MulAdd(exp_f32_poly(d, r), hn::Mul(r, r), r);
    // t's bits are 0x4B400000 + n; shifted by 23 the offset's bits leave the word.
    const V pow2n =
            hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, t), hn::Set(di, 127))));
    return hn::MulAdd(pow2n, q, hn::Sub(pow2n, hn::Set(d, 1.0f)));
}

// EXPM1: expm1_f32 with x clamped to -87 below (where expm1 is -1 in float from -17.4 on; -inf
// included). x = 0 keeps its sign. x > 88 and NaN take naive's formula.
struct Expm1F {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V y = expm1_f32(d, hn::Max(x, hn::Set(d, -87.0f)));
        return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, y);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Le(x[0], hn::Set(d, 88.0f)));
    }
};

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) (exp_f32, within 1 ULP; |x| clamped to 87,
// where e is still normal and x + log1p(e) is x), as naive. log1p(e) is at most ln 2, so above
// zero it is the smaller term of the sum. Below -87 (subnormal results) and NaN, naive's formula.
template <class D, class V>
HWY_INLINE V softplus_log_term(D d, V x) {
    const V a = hn::Min(hn::Abs(x), hn::Set(d, 87.0f));
    return log1p_small_f32(d, exp_f32<false>(d, hn::Neg(a), a));
}
struct SoftplusF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Add(hn::Max(x, hn::Zero(d)), softplus_log_term(d, x));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Ge(x[0], hn::Set(d, -87.0f)));
    }
};
// logsigmoid(x) = -softplus(-x) = min(x, 0) - log1p(exp(-|x|)); above 87 and NaN, naive's.
struct LogSigmoidF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Sub(hn::Min(x, hn::Zero(d)), softplus_log_term(d, x));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Le(x[0], hn::Set(d, 87.0f)));
    }
};

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NEOMEG_X86_LOG_F32_HWY_INL_H_
