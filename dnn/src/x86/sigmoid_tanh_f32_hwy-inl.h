// sigmoid and tanh in float32 vectors, the formulas of SIGMOID and TANH in elemwise_math_hwy.cpp
// (SigmoidF, TanhF: their accuracy is argued there; measured within 2 and 1 ULPs of naive over
// every float input) shared with the LSTM gate kernel (lstm_hwy.cpp), with the float helpers they
// need. Both are valid on every float but NaN, which comes out as a number: callers that must
// propagate NaN put it back (or redo such lanes). Included once per target like Highway's own
// -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_SIGMOID_TANH_F32_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_SIGMOID_TANH_F32_HWY_INL_H_
#undef NEOMEG_X86_SIGMOID_TANH_F32_HWY_INL_H_
#else
#define NEOMEG_X86_SIGMOID_TANH_F32_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include "src/x86/exp_f32_hwy-inl.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[0] + s (c[1] + s (c[2] + ...)).
template <class D, class V, class T, size_t N>
HWY_INLINE V poly(D d, V s, const T (&c)[N]) {
    V r = hn::Set(d, c[N - 1]);
    for (size_t k = N - 1; k-- > 0;)
        r = hn::MulAdd(r, s, hn::Set(d, c[k]));
    return r;
}

#if !HWY_NATIVE_FMA
// a = hi + lo with 12-bit halves (Veltkamp's split by 2^12 + 1), whose products are exact: Dekker's
// product where the target has no FMA.
template <class D, class V>
HWY_INLINE void split_halves(D d, V a, V& hi, V& lo) {
    const V c = hn::Mul(a, hn::Set(d, 4097.0f));
    hi = hn::Sub(c, hn::Sub(c, a));
    lo = hn::Sub(a, hi);
}
#endif

// a b - h exactly for an h within a few ULPs of a b (the product's 48 bits less h's leading ones
// fit a float), as square_error.
template <class D, class V>
HWY_INLINE V product_error(D d, V a, V b, V h) {
#if HWY_NATIVE_FMA
    (void)d;
    return hn::MulSub(a, b, h);
#else
    V ah, al, bh, bl;
    split_halves(d, a, ah, al);
    split_halves(d, b, bh, bl);
    const V err = hn::Add(hn::Sub(hn::Mul(ah, bh), h), hn::Mul(ah, bl));
    return hn::Add(hn::Add(err, hn::Mul(al, bh)), hn::Mul(al, bl));
#endif
}

// sigmoid(x) from e = exp(-|x|) <= 1: 1 / (1 + e) at x >= 0, e / (1 + e) below. -|x| is clamped
// to -87, exp_f32's range: below it the result is e^-87 / (1 + e^-87) instead of the subnormal
// or zero sigmoid (SIGMOID redoes those lanes in double).
constexpr float kSigmoidLow = -87.0f;

template <class D, class V>
HWY_INLINE V sigmoid_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    // -|x| as x with its sign bit set: one operation where Neg(Abs) is two
    const V e = exp_f32<false>(d, hn::Max(hn::Or(x, hn::SignBit(d)), hn::Set(d, kSigmoidLow)), x);
    return hn::Div(hn::IfNegativeThenElse(x, e, one), hn::Add(one, e));
}

// tanh(x) on a = |x| with x's sign put back: a + a^3 P(a^2) below kTanhSplit, (1 - e) / (1 + e)
// with e = exp(-2a) and the roundings of the quotient's operands carried from there.
constexpr float kTanhSplit = 0.75f;
constexpr float kTanhP[] = {-3.333333135e-01f, 1.333317459e-01f,  -5.393514782e-02f,
                            2.161186002e-02f,  -7.926871069e-03f, 1.904619858e-03f};

template <class D, class V>
HWY_INLINE V tanh_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    const V a = hn::Abs(x);
    const V s = hn::Mul(a, a);
    const V near = hn::MulAdd(hn::Mul(s, a), poly(d, s, kTanhP), a);
    const V e = exp_f32<false>(d, hn::Mul(hn::Min(a, hn::Set(d, 10.0f)), hn::Set(d, -2.0f)), a);
    const V num = hn::Sub(one, e);
    const V num_lo = hn::Sub(hn::Sub(one, num), e);
    const V den = hn::Add(one, e);
    const V den_lo = hn::Add(hn::Sub(one, den), e);
    const V q = hn::Div(num, den);
    const V c = hn::NegMulAdd(q, den_lo, hn::Sub(num_lo, product_error(d, q, den, num)));
    const V far = hn::MulAdd(c, hn::ApproximateReciprocal(den), q);
    return hn::CopySignToAbs(hn::IfThenElse(hn::Lt(a, hn::Set(d, kTanhSplit)), near, far), x);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NEOMEG_X86_SIGMOID_TANH_F32_HWY_INL_H_
