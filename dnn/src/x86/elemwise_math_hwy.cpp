// The float32 Elemwise modes that Highway's math library has no function for, compiled once per
// instruction set like elemwise_hwy.cpp. TAN, SIN, COS and POW run in double lanes with
// polynomials fitted to float accuracy (see exp_d and what precedes it), rounded once, and so does
// ERFCINV (see kErfinvNear; ERFINV too on targets without FMA, in float lanes with it: ErfInvF);
// ATAN2 from Highway's atan, in double. MOD is exact (a - trunc(a / b) b is exact in double for
// float operands whose quotient is below 2^24). EXP, GELU and its gradient run in float (see Gelu
// and elemwise_math_hwy.h), as do ERF and ERFC (ErfF, ErfcF; in double lanes on targets without
// FMA), SIGMOID, SILU, TANH (see TanhF), LOG, LOG1P, EXPM1, ATANH, SOFTPLUS and LOGSIGMOID
// (log_f32_hwy-inl.h), and TRUE_DIV of int32 divides in double like naive. Lanes outside a
// formula's domain or accurate range take naive's scalar formula.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/elemwise_math_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#include "src/x86/elemwise_f32_hwy-inl.h"
#include "src/x86/elemwise_hwy-inl.h"
#include "src/x86/exp_f32_hwy-inl.h"
#include "src/x86/log_f32_hwy-inl.h"
#include "src/x86/sigmoid_tanh_f32_hwy-inl.h"
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "src/x86/elemwise_math_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using Mode = elemwise::Mode;

// fdlibm's rational function for erfc(x) = exp(-x^2 - 0.5625 + R/S (1 / x^2)) / x above 1 / 0.35,
// ERFC's far tail (erfc_far).
constexpr double kRB[] = {-9.86494292470009928597e-03, -7.99283237680523006574e-01,
                          -1.77579549177547519889e+01, -1.60636384855821916062e+02,
                          -6.37566443368389627722e+02, -1.02509513161107724954e+03,
                          -4.83519191608651397019e+02};
constexpr double kSB[] = {1.0,
                          3.03380607434824582924e+01,
                          3.25792512996573918826e+02,
                          1.53672958608443695994e+03,
                          3.19985821950859553908e+03,
                          2.55305040643316442583e+03,
                          4.74528541206955367215e+02,
                          -2.24409524465858183362e+01};

// The erf formulas reach |x| = 26 (beyond, the exponential of the tail underflows); lanes past it
// take the scalar formula.
constexpr double kErfReach = 26;

// ERF, ERFC, TAN, SIN, COS and POW: double formulas of float accuracy. The contract
// (elemwise_f32_max_ulp): each float32 result is within one float ULP of naive's, std::erf, erfc,
// tan, sin, cos or pow in double rounded once to float. Naive's result is one of the two floats
// around the exact value (glibc's double functions are within a double ULP or two of it), and so is
// any result less than one float ULP from the exact value; so that distance below one ULP is what
// these formulas keep. A double formula of relative error eps, rounded once to float, is within
// 0.5 + eps 2^24 float ULPs of the exact value: eps = 2^-26 keeps it at 0.75, where fdlibm's and
// Highway's double functions spend rational functions (divisions), long polynomials and exact range
// reductions on 2^-53. So these are polynomials fitted to 2^-26.5 .. 2^-30
// (scripts/fit_double_modes.py), with no division where one can be avoided, in double lanes, where
// x^2 and x - k pi/2 of a float x are exact or nearly so (float lanes would have to split them by
// hand, and each float rounding is worth a quarter of the budget). Measured on every float32 input
// (ERF, ERFC, TAN, SIN, COS) and on 5.3 10^8 POW operand pairs: at most one ULP from naive's
// (dnn/bench/elemwise_ulp.cpp).

// exp(t) for |t| <= 708: t = n ln 2 + r, |r| <= ln 2 / 2 (n by the 1.5 * 2^52 rounding trick,
// r by two FMAs with ln 2 in two parts; without FMA the product's rounding costs 2^-53 * 708
// absolute, 8e-14 relative), exp(r) by a degree-6 polynomial (2^-29.0), times 2^n through the
// exponent bits (n + 1023 in [1, 2045]).
constexpr double kExpR[] = {1.0000000005920209,  1.0000000361258996,  0.4999999149303684,
                            0.1666642083211898,  0.04166835803302688, 0.00837477152012567,
                            0.001382942059572822};
template <class D, class V>
HWY_INLINE V exp_d(D d, V t) {
    const hn::RebindToSigned<D> di;
    const V magic = hn::Set(d, 6755399441055744.0);  // 1.5 * 2^52: n in the low bits
    const V k = hn::MulAdd(t, hn::Set(d, 1.4426950408889634), magic);
    const V n = hn::Sub(k, magic);
    V r = hn::NegMulAdd(n, hn::Set(d, 0.6931471805599453), t);
    r = hn::NegMulAdd(n, hn::Set(d, 2.3190468138462996e-17), r);
    // k's bits are those of 1.5 * 2^52 plus n: shifted by 52, only (n + 1023)'s low 12 bits stay.
    const auto bits = hn::ShiftLeft<52>(hn::Add(hn::BitCast(di, k), hn::Set(di, 1023)));
    return hn::Mul(poly(d, r, kExpR), hn::BitCast(d, bits));
}

// ERF and ERFC on targets without FMA (ErfF and ErfcF are their float formulas):
// erf(x) = x P(x^2) for |x| < 1 (P of degree 6, 2^-29.6 relative). For 1 <= |x| <= 4: erf(|x|)
// = M(|x| - 2.5) (degree 14, 2^-26.6 absolute, where erf is above 0.84: 0.1 of its ULP), and
// erfc(|x|) = exp(-x^2) C(|x| - 2.5) (C of degree 12 fitted to erfcx = e^(x^2) erfc on [1, 4],
// 2^-27.3 relative; x^2 of a float is exact in double), which keeps erfc's relative accuracy
// where it is small. erf(4) and erfc(-4) round to float's 1 and 2 (erfc(4) = 1.5e-8 is below half
// of float's ULP at 1), so |x| is clamped to 4 there; only ERFC of x > 4 needs more, fdlibm's tail
// (erfc_far). A vector of N(0, 1) data almost always holds lanes of both ranges, and computes
// both (compressing each range's lanes into vectors of their own, as this file did for fdlibm's
// formulas, costs more than it saves here: AVX-512's compressing store is microcoded on AMD Zen 4,
// and took ERF from 3.2 to 10 ms per 2M floats).
constexpr double kErfSmallReach = 1.0, kErfClamp = 4.0;
constexpr double kErfSmall[] = {
        1.1283791656893218,    -0.37612625567399127,   0.11283582247991372,  -0.026853691099644993,
        0.0051880988892537075, -0.0008008189321748339, 7.847259121790901e-05};
constexpr double kErfMid[] = {
        0.9995930476322774,      0.002178184612604919,  -0.005445688652438388,
        0.00835176967689085,     -0.00862260429771345,  0.0061091096276024645,
        -0.002797554688175836,   0.0005603601418909794, 0.0002587301172637553,
        -0.0002706181954295199,  8.110047294598643e-05, 1.776023736393294e-05,
        -1.5719270831038758e-05, 4.985671924688693e-07, 8.901371472313963e-07};
constexpr double kErfcxMid[] = {
        0.21080636368941846,    -0.07434733826187415,   0.02493800734707074,
        -0.008001679940112874,  0.0024669976898033094,  -0.0007331884928255215,
        0.00021105113882194634, -5.948642418753107e-05, 1.59971455623848e-05,
        -3.763825843203778e-06, 1.023505672863699e-06,  -4.237685894474896e-07,
        9.592293071032482e-08};

// fdlibm's erfc for 4 < x <= kErfReach (ERFC's far tail, 3e-5 of N(0, 1) data): its rational
// function for x above 1 / 0.35.
template <class D, class V>
HWY_INLINE V erfc_far(D d, V x) {
    const V s = hn::Div(hn::Set(d, 1.0), hn::Mul(x, x));
    const V y = hn::Div(poly(d, s, kRB), poly(d, s, kSB));
    return hn::Div(hn::Exp(d, hn::Sub(hn::Sub(y, hn::Set(d, 0.5625)), hn::Mul(x, x))), x);
}

// erf(x), or erfc(x) when kComplement, for |x| >= kErfSmallReach and finite |x| <= kErfReach.
template <bool kComplement, class D, class V>
HWY_INLINE V erf_mid(D d, V x) {
    const V c = hn::Min(hn::Abs(x), hn::Set(d, kErfClamp));
    const V t = hn::Sub(c, hn::Set(d, 2.5));
    if constexpr (!kComplement) {
        return hn::CopySign(poly(d, t, kErfMid), x);
    } else {
        const V q = hn::Mul(exp_d(d, hn::Neg(hn::Mul(c, c))), poly(d, t, kErfcxMid));
        V r = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Sub(hn::Set(d, 2.0), q), q);
        const auto far = hn::Gt(x, hn::Set(d, kErfClamp));
        if (HWY_UNLIKELY(!hn::AllFalse(d, far)))
            r = hn::IfThenElse(far, erfc_far(d, x), r);
        return r;
    }
}

// erf(x), or erfc(x) when kComplement, for finite |x| <= kErfReach: each range only where a lane
// falls in it.
template <bool kComplement, class D, class V>
HWY_INLINE V erf_fast(D d, V x) {
    const auto small = hn::Lt(hn::Abs(x), hn::Set(d, kErfSmallReach));
    if (hn::AllFalse(d, small))
        return erf_mid<kComplement>(d, x);
    V r = hn::Mul(x, poly(d, hn::Mul(x, x), kErfSmall));
    if constexpr (kComplement)
        r = hn::Sub(hn::Set(d, 1.0), r);
    return hn::AllTrue(d, small) ? r : hn::IfThenElse(small, r, erf_mid<kComplement>(d, x));
}

// Lanes with |x| > limit or NaN, for one operand.
template <int kOperand>
struct Beyond {
    double limit;
    template <class D, class V>
    auto special(D d, const V* x) const {
        return outside(d, x[kOperand], limit);
    }
};

struct Erf : Beyond<0> {
    Erf() : Beyond{kErfReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        return erf_fast<false>(d, x);
    }
};
struct Erfc : Beyond<0> {
    Erfc() : Beyond{kErfReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        return erf_fast<true>(d, x);
    }
};

// ERF in float lanes (8 on AVX2, 16 on AVX-512; in double lanes it ran at 0.56x PyTorch's float
// formula on AVX2). Within one float ULP of naive is less than 1.5 ULPs from the exact value
// (naive's result is within half an ULP of it), and these formulas keep 1.08 (measured on every
// float32 input): for a = |x| < kErfFSmallReach, erf(x) = a c0 + a D(x^2), c0 = 2 / sqrt(pi)
// rounded to float (D takes in the rest; degree 6, 2^-31 relative), the product a c0 and the
// sum rounded once by an FMA; above, erf(a) = 1 - exp(-B(a)) with B(a) = -log(erfc(a)) a
// polynomial in a (degree 6, its error times erfc(a) below 2^-29: an error in B moves erf by erfc
// times it), and 1 - exp(-B) = -expm1(-B), whose 1 stays out of the rounded exponential. B is at
// least 1.6 there, so exp's reduction by n ln 2 is exact, and B's own rounding moves erf by at
// most 0.4 ULP. erf(a) rounds to float's 1 from 3.92 on: a is clamped to kErfFClamp. The
// coefficients are least-squares fits rounded to float one at a time, the rest refitted
// (scripts/fit_erf_f32.py). NaN takes naive's formula (the clamp would lose it). The sums' single
// roundings are FMAs': Highway's targets without FMA (EMU128, SCALAR; SSE4 is not compiled) would
// round the products apart, 2 ULPs from naive, and run ERF in double lanes instead (Erf).
constexpr float kErfFSmallReach = 0.921875f, kErfFClamp = 4.0f;
constexpr float kErfFC0 = 1.128379225730896f;
constexpr float kErfFSmall[] = {-5.9093494542139524e-08f, -0.37612634897232056f,
                                0.11283709853887558f,     -0.026860032230615616f,
                                0.00520231993868947f,     -0.0008154968963935971f,
                                8.414506010012701e-05f};
constexpr float kErfFLogTail[] = {0.0002099135163007304f,  1.1276154518127441f,
                                  0.6372857689857483f,     0.10383891314268112f,
                                  -0.022181419655680656f,  0.003031613538041711f,
                                  -0.00019473693100735545f};
// erf(|x|) = a c0 + a D(x^2) for a = |x| below kErfFSmallReach, the sum and a c0 rounded once.
template <class D, class V>
HWY_INLINE V erf_small_abs(D d, V a, V x) {
    return hn::MulAdd(a, hn::Set(d, kErfFC0), hn::Mul(a, poly(d, hn::Mul(x, x), kErfFSmall)));
}

struct ErfF {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V a = hn::Abs(x);
        const V small = erf_small_abs(d, a, x);
        const V b = poly(d, hn::Min(a, hn::Set(d, kErfFClamp)), kErfFLogTail);
        const V big = hn::Neg(expm1_f32(d, hn::Neg(b)));
        return hn::CopySignToAbs(hn::IfThenElse(hn::Lt(a, hn::Set(d, kErfFSmallReach)), small, big),
                                 x);
    }
    template <class D, class V>
    auto special(D, const V* x) const {
        return hn::IsNaN(x[0]);
    }
};

// GELU and its gradient in float, through Phi(-a) = e(a) R(a) for a = |x| (Phi the normal cdf,
// e(a) = exp(-a^2 / 2)): x Phi(x) is x e R below zero and x - x e R above, and the gradient
// g = Phi(x) + x phi(x) is e S (a0 - a) below zero and 1 - e S (a0 - a) above, where
// S(a) = (R(a) - a / sqrt(2 pi)) / (a0 - a) takes out g's root at x = -a0, so that next to it g
// keeps its relative accuracy. R and S are rational functions fitted (minimax of the relative
// error over [0, kGeluCap]) by scripts/fit_gelu.py: 4.7e-9 and 6.6e-9 relative, against float's
// 6e-8 half ULP, with positive coefficients, so that Horner's rule on a >= 0 cancels nothing, and
// monic denominators, whose first Horner step is an addition. Positive x are clamped to
// kGeluCap, where e R is below 2^-120, so x - x e R is x; lanes below -kGeluCap (results near or
// below the subnormal range, past exp_f32's) and NaN take naive's scalar formula. Every float input
// is within elemwise_f32_max_ulp(GELU or GELU_GRAD) ULPs of naive's result (measured over all
// floats, see elemwise_math_hwy.h).
constexpr float kGeluCap = 13.0f;
constexpr float kGeluR_P[] = {4.993911743e+01f, 4.344462585e+01f, 1.805636787e+01f,
                              3.976025105e+00f, 3.989482522e-01f};
constexpr float kGeluR_Q[] = {9.987823486e+01f, 1.665805817e+02f, 1.190853043e+02f,
                              4.624365234e+01f, 9.967181206e+00f};
constexpr float kGeluS_P[] = {2.607233047e+01f, 2.937793922e+01f, 1.465739155e+01f,
                              3.686666012e+00f, 3.989452422e-01f};
constexpr float kGeluS_Q[] = {3.920191574e+01f, 5.458469772e+01f, 3.078652954e+01f,
                              8.489645004e+00f};
// exp(-r / 2) for |r| <= ln 2, degree 6 (1.9e-9 relative).
constexpr float kGeluExp[] = {1.0f,
                              -0.5f,
                              1.249999776e-01f,
                              -2.083302476e-02f,
                              2.604264067e-03f,
                              -2.617129940e-04f,
                              2.162007149e-05f};
// g's root a0 = 0.75179152469356445746 as a float and the float nearest the rest.
constexpr float kGeluRootHi = 7.517915368e-01f, kGeluRootLo = -1.211444989e-08f;

// c[0] + s (c[1] + ... + s (c[N - 1] + s)): a monic polynomial, its leading 1 left out.
template <class D, class V, size_t N>
HWY_INLINE V monic_poly(D d, V s, const float (&c)[N]) {
    V r = hn::Add(s, hn::Set(d, c[N - 1]));
    for (size_t k = N - 1; k-- > 0;)
        r = hn::MulAdd(r, s, hn::Set(d, c[k]));
    return r;
}

// a^2 - h exactly, for h = a^2 rounded: one FMA, or Dekker's product where the target has none
// (Highway's emulated and scalar targets compute MulSub as a product and a difference, which
// would round the error away: 35 ULPs at x = -13).
template <class D, class V>
HWY_INLINE V square_error(D d, V a, V h) {
#if HWY_NATIVE_FMA
    (void)d;
    return hn::MulSub(a, a, h);
#else
    V hi, lo;
    split_halves(d, a, hi, lo);
    const V err = hn::Add(hn::Sub(hn::Mul(hi, hi), h), hn::Mul(hn::Add(hi, hi), lo));
    return hn::Add(err, hn::Mul(lo, lo));
#endif
}

// ERFC in float lanes, within one float ULP of naive like ERF (below 1.5 ULPs of the exact value:
// 1.39 at most in a scalar model of these operations over every float of [0.46875, 9]; in double
// lanes it ran at 0.65x PyTorch's speed on AVX2). erfc keeps its relative accuracy out to x = 9
// (erfc(9) = 4e-37), so no part of it may be rounded at the result's scale more than once: for
// a = |x| >= kErfcFSmallReach, erfc(a) = 2^n exp(r) erfcx(a) with a^2 = h + l an exact pair and
// -h = n ln 2 + r0 exactly (as GELU's gauss_exp), r = r0 + (l's and ln 2's low parts), and
// erfcx(a) = qh + ql a pair as well: c0 + c0lo + u R(u) with c0 + u R rounded once by an FMA and
// its rest by another (pair_sum). Then exp(r) erfcx = (qh + ql)(1 + r0 + s), s = r - r0 +
// r^2 P(r) (exp_f32's polynomial), where qh + qh r0 is a pair the same way: the only rounding at
// the result's scale is the last sum's. erfcx is a polynomial in
// a - 1.234375 on [0.46875, 2) (degree 11, 2^-29.3 relative; two pieces of degree 9 picked per
// lane kept 0.95 ULP but cost 0.5 ms more per 2M floats, in blends), and from 2 on G(1 / a^2) / a,
// G(z) = erfcx(1 / sqrt(z)) / sqrt(z) a polynomial in z - 0.13 (degree 9, 2^-30.4) with 1 / a =
// a / a^2 (the quotient's remainder by an FMA keeps the pair exact), computed in every vector
// (a branch on 5% of lanes, a third of the vectors, mispredicted more than it saved). Negative x:
// 2 - erfc(a); |x| below kErfcFSmallReach: 1 - erf(x) with ErfF's small formula (erf below 0.5
// there, so its error is at most half an ULP of the result's). x above kErfcFReach (subnormal and
// zero results) and NaN take naive's formula; a is clamped to it, where 2 - erfc(a) is 2.
// Coefficients from scripts/fit_erf_f32.py. FMA targets only, like ErfF.
constexpr float kErfcFSmallReach = 0.46875f, kErfcFReach = 9.0f, kErfcFFar = 2.0f;
template <size_t N>
struct ErfcxPiece {
    float at;        // u = a - at (z - at for the far piece)
    float c0, c0lo;  // erfcx (G) at u = 0, as a float pair
    float r[N];      // R, lowest degree first
};
constexpr ErfcxPiece<11> kErfcxNear = {
        1.234375f,
        0.37111201882362366f,
        5.466260333264472e-09f,
        {-0.21219635009765625f, 0.10918214172124863f, -0.05161662399768829f, 0.022734081372618675f,
         -0.009420104324817657f, 0.0037018833681941032f, -0.0013916478492319584f,
         0.0004938198835588992f, -0.000163250180776231f, 6.546594522660598e-05f,
         -2.479668182786554e-05f}};
constexpr ErfcxPiece<9> kErfcxFar = {
        0.13f,
        0.5330302119255066f,
        2.7168885807782317e-08f,
        {-0.2063681185245514f, 0.2048107236623764f, -0.2973095178604126f, 0.5408142805099487f,
         -1.1477644443511963f, 2.608443021774292f, -6.53666353225708f, 27.761966705322266f,
         -89.0868911743164f}};

// c0 + c0lo + u R(u) as hi + lo: hi rounded once by an FMA, and the rest, (c0 - hi) + u R
// (c0 - hi exact), by a second FMA, its rounding a 2^-24 part of the rest. Products reach sums
// here only through explicit FMAs, so GCC's contraction of a product and a sum (this file is
// built with it) finds nothing to change.
template <class V>
HWY_INLINE void pair_sum(V c0, V c0lo, V u, V r, V& hi, V& lo) {
    hi = hn::MulAdd(u, r, c0);
    lo = hn::Add(hn::MulAdd(u, r, hn::Sub(c0, hi)), c0lo);
}

// erfcx(a) = hi + lo for a in [kErfcFSmallReach, kErfcFReach]; h = a^2 rounded.
template <class D, class V>
HWY_INLINE void erfcx_pair(D d, V a, V h, V& hi, V& lo) {
    const V u = hn::Sub(a, hn::Set(d, kErfcxNear.at));
    pair_sum(hn::Set(d, kErfcxNear.c0), hn::Set(d, kErfcxNear.c0lo), u, poly(d, u, kErfcxNear.r),
             hi, lo);
    const auto far = hn::Ge(a, hn::Set(d, kErfcFFar));
    // G(z) / a, z = 1 / h (h's rounding moves G by z / 2 of it, 2^-27 relative at most).
    const V z = hn::Sub(hn::Div(hn::Set(d, 1.0f), h), hn::Set(d, kErfcxFar.at));
    V gh, gl;
    pair_sum(hn::Set(d, kErfcxFar.c0), hn::Set(d, kErfcxFar.c0lo), z, poly(d, z, kErfcxFar.r), gh,
             gl);
    // 1 / a = a z to 2^-23: qh's error is in the exact remainder gh - qh a, and ql, a
    // 2^-23 part of qh, needs no more.
    const V inv = hn::Mul(a, hn::Add(z, hn::Set(d, kErfcxFar.at)));
    const V qh = hn::Mul(gh, inv);
    const V ql = hn::Mul(hn::Add(hn::NegMulAdd(qh, a, gh), gl), inv);
    hi = hn::IfThenElse(far, qh, hi);
    lo = hn::IfThenElse(far, ql, lo);
}

// erfc(a) for a in [kErfcFSmallReach, kErfcFReach].
template <class D, class V>
HWY_INLINE V erfc_tail(D d, V a) {
    const hn::RebindToSigned<D> di;
    const V h = hn::Mul(a, a);
    const V l = square_error(d, a, h);
    const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: n in the low bits
    const V t = hn::MulAdd(h, hn::Set(d, -1.442695040888963407359924681f), magic);
    const V n = hn::Sub(t, magic);
    // -h - n ln2hi is exact (|r0| < 0.35 and h's ULP at least 2^-25 where n != 0).
    const V r0 = hn::NegMulAdd(n, hn::Set(d, 0.693145751953125f), hn::Neg(h));
    const V rl = hn::NegMulAdd(n, hn::Set(d, 1.428606765330187045e-6f), hn::Neg(l));
    const V r = hn::Add(r0, rl);
    const V s = hn::MulAdd(hn::Mul(r, r), exp_f32_poly(d, r), rl);  // exp(r) = 1 + r0 + s
    V qh, ql;
    erfcx_pair(d, a, h, qh, ql);
    // qh + qh r0 rounded once, and its rest as in pair_sum.
    const V sum = hn::MulAdd(qh, r0, qh);
    const V err = hn::MulAdd(qh, r0, hn::Sub(qh, sum));
    const V rest = hn::MulAdd(ql, hn::Add(hn::Set(d, 1.0f), r0), hn::MulAdd(qh, s, err));
    // t's bits are 0x4B400000 + n; shifted by 23 the offset's bits leave the word.
    const V pow2n =
            hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, t), hn::Set(di, 127))));
    return hn::Mul(hn::Add(sum, rest), pow2n);
}

struct ErfcF {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V a = hn::Abs(x);
        const V small = hn::Sub(hn::Set(d, 1.0f), hn::CopySignToAbs(erf_small_abs(d, a, x), x));
        const V e = erfc_tail(d, hn::Min(a, hn::Set(d, kErfcFReach)));
        const V tail = hn::IfNegativeThenElse(x, hn::Sub(hn::Set(d, 2.0f), e), e);
        return hn::IfThenElse(hn::Lt(a, hn::Set(d, kErfcFSmallReach)), small, tail);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Le(x[0], hn::Set(d, kErfcFReach)));
    }
};

// e(a) for a <= kGeluCap as a mantissa m and a power of two n: the factor of e(a) that
// scale_by_exp2 applies to a product. exp_f32's reduction, but for the argument -(h + l) / 2, with
// h + l = a^2 exactly (square_error; h alone, rounded near 169, would cost up to 40 ULPs in the
// tails): r = h + 2 n ln 2 + l, in [-ln 2, ln 2] (the first FMA exact, as its terms cancel), and
// m = exp(-r / 2) by one polynomial in r, whose halvings are folded into the coefficients.
template <class D, class V>
HWY_INLINE V gauss_exp(D d, V a, hn::Vec<hn::RebindToSigned<D>>& n_bits) {
    const hn::RebindToSigned<D> di;
    const V h = hn::Mul(a, a);
    const V l = square_error(d, a, h);
    const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: n in the low bits
    const V t = hn::MulAdd(h, hn::Set(d, -0.7213475204444817f), magic);  // -log2(e) / 2
    const V n = hn::Sub(t, magic);
    V r = hn::MulAdd(n, hn::Set(d, 2 * 0.693145751953125f), h);
    r = hn::MulAdd(n, hn::Set(d, 2 * 1.428606765330187045e-6f), r);
    r = hn::Add(r, l);
    // t's bits are 0x4B400000 + n; shifted by 23 the offset's bits leave the word.
    n_bits = hn::ShiftLeft<23>(hn::BitCast(di, t));
    return poly(d, r, kGeluExp);
}

// v 2^n, n from gauss_exp, by adding n to v's exponent: exact where v 2^n is a normal float or
// n = 0, which holds for the products of Gelu and GeluGrad (n is nonzero only for a > 0.8, where
// they are above 2^-124).
template <class D, class V>
HWY_INLINE V scale_by_exp2(D d, V v, hn::Vec<hn::RebindToSigned<D>> n_bits) {
    const hn::RebindToSigned<D> di;
    return hn::BitCast(d, hn::Add(hn::BitCast(di, v), n_bits));
}

// Lanes below -kGeluCap, and NaN.
template <class D, class V>
HWY_INLINE auto gelu_tail(D d, V x) {
    return hn::Not(hn::Ge(x, hn::Set(d, -kGeluCap)));
}

struct Gelu {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V xc = hn::Min(x, hn::Set(d, kGeluCap));
        const V a = hn::Abs(xc);
        hn::Vec<hn::RebindToSigned<D>> n;
        const V m = gauss_exp(d, a, n);
        const V r = hn::Div(poly(d, a, kGeluR_P), monic_poly(d, a, kGeluR_Q));
        // x e R, rounded once where it is the result (below zero); above, x - x e R is x past the
        // clamp, inf included.
        const V below = scale_by_exp2(d, hn::Mul(m, hn::Mul(xc, r)), n);
        return hn::IfNegativeThenElse(x, below, hn::Sub(x, below));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return gelu_tail(d, x[0]);
    }
};
// (x, dy): dy g(x). x = inf also takes the scalar formula, whose inf * phi(inf) is NaN.
struct GeluGrad {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        const V a = hn::Min(hn::Abs(x), hn::Set(d, kGeluCap));
        hn::Vec<hn::RebindToSigned<D>> n;
        const V m = gauss_exp(d, a, n);
        const V s = hn::Div(poly(d, a, kGeluS_P), monic_poly(d, a, kGeluS_Q));
        // a0 - a: the high part's difference is exact within a factor 2 of a0 (Sterbenz), where
        // it cancels; elsewhere its rounding is a relative 2^-24.
        const V t = hn::Add(hn::Sub(hn::Set(d, kGeluRootHi), a), hn::Set(d, kGeluRootLo));
        const V es = scale_by_exp2(d, hn::Mul(m, hn::Mul(s, t)), n);
        const V g = hn::IfNegativeThenElse(x, es, hn::Sub(hn::Set(d, 1.0f), es));
        return hn::Mul(dy, g);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Or(gelu_tail(d, x[0]), hn::Eq(x[0], hn::Inf(d)));
    }
};

// ln(a) for a positive normal double (every float but zero, subnormals included): a = 2^k m with
// m in [sqrt(1/2), sqrt(2)) from the bits, ln m = 2 atanh(f) for f = (m - 1) / (m + 1), |f| <=
// 0.1716, by its series to f^13 (2^-39.5 relative). POW's vector lanes have |b ln a| <= 700,
// whose error is then at most 700 2^-39.5 = 2^-30 absolute, 2^-30 relative in exp's result.
constexpr double kAtanhSeries[] = {1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13};
template <class D, class V>
HWY_INLINE V log_d(D d, V a) {
    const hn::RebindToSigned<D> di;
    const auto ia = hn::BitCast(di, a);
    const auto k = hn::ShiftRight<52>(hn::Sub(ia, hn::Set(di, 0x3fe6a09e667f3bcdLL)));  // sqrt(1/2)
    const V m = hn::BitCast(d, hn::Sub(ia, hn::ShiftLeft<52>(k)));
    const V magic = hn::Set(d, 6755399441055744.0);  // k as a double: its bits added to 1.5 * 2^52
    const V kd = hn::Sub(hn::BitCast(d, hn::Add(k, hn::BitCast(di, magic))), magic);
    const V one = hn::Set(d, 1.0);
    const V f = hn::Div(hn::Sub(m, one), hn::Add(m, one));
    const V l = hn::Mul(hn::Add(f, f), poly(d, hn::Mul(f, f), kAtanhSeries));
    return hn::MulAdd(kd, hn::Set(d, 0.6931471805599453),
                      hn::MulAdd(kd, hn::Set(d, 2.3190468138462996e-17), l));
}

// ERFINV and ERFCINV in M. Giles' variable w = -log(1 - y^2) = -log(t (2 - t)) for t = 1 - |y|
// ("Approximating the erfinv function", GPU Computing Gems, 2011): erfinv(y) = y P(w - 2.5) for
// w < 5 and Q(sqrt(w) - 3) above, his single-precision form with polynomials of two and one
// degrees more, fitted to 2^-31.1 and 2^-30.7 relative (scripts/fit_double_modes.py), so that the
// float result keeps ERF's contract above. t (2 - t) is exact for a float t but for the product's
// rounding, and log_d is within 2^-39.5 relative. Naive refines Giles' start by Newton steps on
// erf to double accuracy; our first vector form took three such steps on fdlibm's erf (90 ns a
// float on Zen 4, 45 times PyTorch's float formula), the second one step on the ERF and ERFC
// polynomials above (9 ns): the polynomials are of the same accuracy for a quarter of the work.
constexpr double kErfinvNear[] = {
        1.501409351705582,       0.24664027568385655,    -0.004177324738210866,
        -0.0012527045694521511,  0.00021826368832820897, -4.999023223448994e-06,
        -3.42607081352564e-06,   4.797919401100935e-07,  1.6467958243794683e-08,
        -1.1037704722096803e-08, 4.363443769274574e-10,  1.336833987387853e-10};
constexpr double kErfinvFar[] = {2.83280198555588,        1.002662393898818,
                                 0.006843637505250949,    -0.0034452590083781337,
                                 0.001143035490637597,    -0.0002200593957634736,
                                 -3.922295086982036e-05,  5.413033565942845e-05,
                                 -1.9126253652295626e-05, 2.067261735280825e-06};
constexpr double kErfinvSplit = 5.0;
// ERFCINV's least argument here: w = 16.1, within the far polynomial's range (16.3); below it
// (and for ERFINV nothing is, float's 1 - 2^-24 being w = 15.9) naive's tail start takes over.
constexpr double kErfcinvLeast = 5e-8;

// erfinv(a) for a = 1 - t in [0, 1), given both exactly (t in [kErfcinvLeast, 1]). Lanes of w
// below 5 (|y| < 0.9966: all but 0.14% of tanh(N(0, 1)) data) take one polynomial; Q only where a
// lane needs it.
template <class D, class V>
HWY_INLINE V erfinv_abs(D d, V a, V t) {
    const V w = hn::Neg(log_d(d, hn::Mul(t, hn::Sub(hn::Set(d, 2.0), t))));
    const auto near = hn::Lt(w, hn::Set(d, kErfinvSplit));
    const V x = hn::Mul(a, poly(d, hn::Sub(w, hn::Set(d, 2.5)), kErfinvNear));
    if (HWY_LIKELY(hn::AllTrue(d, near)))
        return x;
    const V s = hn::Sub(hn::Sqrt(hn::Max(w, hn::Set(d, kErfinvSplit))), hn::Set(d, 3.0));
    return hn::IfThenElse(near, x, poly(d, s, kErfinvFar));
}

// erfinv(y) for |y| < 1: 1 - |y| is exact.
struct ErfInv {
    template <class D, class V>
    V operator()(D d, V y) const {
        const V a = hn::Abs(y);
        return hn::CopySign(erfinv_abs(d, a, hn::Sub(hn::Set(d, 1.0), a)), y);
    }
    template <class D, class V>
    auto special(D d, const V* y) const {
        return hn::Not(hn::Lt(hn::Abs(y[0]), hn::Set(d, 1.0)));
    }
};

// erfcinv(y) = erfinv(1 - y), and -erfcinv(2 - y) above 1 (both differences exact). Lanes of y
// outside (0, 2) less kErfcinvLeast at both ends, NaN included, take naive's formula.
struct ErfcInv {
    template <class D, class V>
    V operator()(D d, V y) const {
        const auto upper = hn::Gt(y, hn::Set(d, 1.0));
        const V t = hn::IfThenElse(upper, hn::Sub(hn::Set(d, 2.0), y), y);
        const V x = erfinv_abs(d, hn::Sub(hn::Set(d, 1.0), t), t);
        return hn::IfThenElse(upper, hn::Neg(x), x);
    }
    template <class D, class V>
    auto special(D d, const V* y) const {
        const V least = hn::Set(d, kErfcinvLeast);
        return hn::Not(hn::And(hn::Ge(y[0], least), hn::Ge(hn::Sub(hn::Set(d, 2.0), y[0]), least)));
    }
};

#if HWY_TARGET != HWY_SCALAR  // a one-lane vector has no halves
// f(dd, xd) on each half of the float vector x promoted to double lanes, each lane rounded once
// back to float: where a float formula leaves its accurate range (ERFINV near +-1, saturated
// SIGMOID), a vector at a time instead of naive's formula lane by lane.
template <class D, class V, class F>
HWY_INLINE V in_double_lanes(D d, V x, F f) {
    const hn::Half<D> dh;
    const hn::Rebind<double, decltype(dh)> dd;
    const auto half = [&](auto xh) { return hn::DemoteTo(dh, f(dd, hn::PromoteTo(dd, xh))); };
    return hn::Combine(d, half(hn::UpperHalf(dh, x)), half(hn::LowerHalf(dh, x)));
}
#endif

// ERFINV in float lanes where the target has FMA (issue 12: in double lanes, a logarithm with a
// division and a degree-11 polynomial per 4 lanes, it ran at 0.66x PyTorch's speed on Zen 3).
// Giles' near formula erfinv(y) = y P(w), w = -log(1 - y^2), with the roundings at the result's
// scale carried in float pairs, so that the result is faithful (below 1 ULP of the exact value;
// measured on every float32 input at the AVX2 and AVX-512 targets, 0.9999 at most, 0.963 above
// |y| = 1e-30 at AVX2): for a = |y|, 1 - a^2 = u + c exactly (a^2 as an exact pair by an FMA,
// 1 - h's rounding by Fast2Sum), w = -(log + log_lo) with log_f32_pair's last two roundings in
// log_lo (near w = 5, P' / P = 0.12 times w's half ULP, 2.4e-7, is 0.44 ULP), P = hi + lo by
// pair_sum (R of degree 8, 2^-27.3 relative, scripts/fit_erfinv_f32.py), and x = a hi + a lo
// rounded once, by an FMA. Without the pairs (Giles' float formula with better coefficients) the
// roundings of w, of c0 + w R and of a P add to 1.35 ULPs. A vector holding a lane of w >= 5 (|y| >
// 0.9966: 1.1% of 8-lane vectors of tanh(N(0, 1)) data), whose far formula Q(sqrt(w) - 3) in float
// would round sqrt(w) and Q's leading terms at the result's scale, is computed by the double
// formula instead (erfinv_abs). |y| >= 1 and NaN take naive's formula.
#if HWY_NATIVE_FMA
// P(w) = c0 + c0lo + w R(w): c0 = sqrt(pi) / 2 as a float pair. Centred at w = 0, not at Giles'
// 2.5, so that w enters R unrounded (w - 2.5 rounds off w's low bits where w is small: 1.45 ULPs at
// y = 0.00427) and R's roundings, times w, stay small against P, which grows with w. c0 has 23
// significant bits, so that pair_sum's c0 - hi is exact up to P = 2.07 (|c0 - hi| < 2 ULPs of
// 2^23 c0's last bit; with 24 bits it rounded from P = 1.77 on, 0.5 ULP).
constexpr float kErfinvFC0 = 0.8862268924713135f, kErfinvFC0Lo = 3.298144335417419e-08f;
constexpr float kErfinvFR[] = {
        0.2320137619972229f,      0.011548841372132301f,   -0.002334584714844823f,
        -0.00012723893451038748f, 4.444450678420253e-05f,  4.0196914596890565e-06f,
        -1.9830263227049727e-06f, 2.2167878910295258e-07f, -8.818025420964659e-09f};

// erfinv(a) for a in [0, 1) through the double formula, lanes rounded once to float.
template <class D, class V>
HWY_INLINE V erfinv_abs_in_double(D d, V a) {
    return in_double_lanes(d, a, [](auto dd, auto ad) {
        return erfinv_abs(dd, ad, hn::Sub(hn::Set(dd, 1.0), ad));
    });
}

struct ErfInvF {
    template <class D, class V>
    V operator()(D d, V y) const {
        const V one = hn::Set(d, 1.0f);
        const V a = hn::Abs(y);
        const V h = hn::Mul(a, a);
        const V u = hn::Sub(one, h);
        // c: 1 - h's rounding (Fast2Sum, 1 >= h) less a^2's. Where u is small, c is a 2^-25
        // absolute part of it; log(u + c) = log u + c / u loses (c / u)^2 / 2 < 2^-36.
        const V c = hn::Sub(hn::Sub(hn::Sub(one, u), h), square_error(d, a, h));
        // w = -(log + log_lo): w's own rounding (half an ULP, 2.4e-7 at w = 4.5) would move P by
        // P' = 0.21 .. 0.25 times it, 0.44 ULP; R stands in for P' = R + w R' in lo (R' is small).
        V log_lo;
        const V w = hn::Neg(log_f32_pair(d, u, c, log_lo));
        const V r = poly(d, w, kErfinvFR);
        V hi, lo;
        pair_sum(hn::Set(d, kErfinvFC0), hn::Set(d, kErfinvFC0Lo), w, r, hi, lo);
        lo = hn::NegMulAdd(log_lo, r, lo);
        V x = hn::MulAdd(a, hi, hn::Mul(a, lo));
        if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Ge(w, hn::Set(d, static_cast<float>(kErfinvSplit))))))
            // The clamp keeps 1 - a within erfinv_abs's range in the lanes naive's formula redoes.
            x = erfinv_abs_in_double(d, hn::Min(a, hn::Set(d, 0.99999994f)));
        return hn::CopySignToAbs(x, y);
    }
    template <class D, class V>
    auto special(D d, const V* y) const {
        return hn::Not(hn::Lt(hn::Abs(y[0]), hn::Set(d, 1.0f)));
    }
};
#endif

// a^b = exp(b ln |a|) (log_d, exp_d) for finite nonzero a and b with |b ln |a|| <= 700: a
// negative a gives that with the sign of (-1)^b for an integer b, NaN for any other b, as pow.
// Zero and non-finite operands, and larger |b ln |a|| (results past float's range either way),
// take the scalar formula.
struct Pow {
    template <class D, class V>
    V operator()(D d, V a, V b) const {
        return from_log(d, a, b, log_d(d, hn::Abs(a)));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        const auto ok = finite_nonzero(d, x);
        V a = hn::IfThenElse(ok, hn::Abs(x[0]), hn::Set(d, 1.0));
        return beyond_exp(d, ok, x[1], log_d(d, a));
    }
    // One logarithm for both: where ok, |a| is what special's substitute is; elsewhere the lane
    // is marked whatever the logarithm.
    template <class D, class V>
    V with_special(D d, const V (&x)[2], hn::Mask<D>& marked) const {
        const V l = log_d(d, hn::Abs(x[0]));
        marked = beyond_exp(d, finite_nonzero(d, x), x[1], l);
        return from_log(d, x[0], x[1], l);
    }

private:
    template <class D, class V>
    static V from_log(D d, V a, V b, V log_a) {
        V r = exp_d(d, hn::Mul(b, log_a));
        auto neg = hn::Lt(a, hn::Zero(d));
        auto integral = hn::Eq(hn::Round(b), b);
        auto odd = hn::And(integral, hn::Ne(hn::Round(hn::Mul(b, hn::Set(d, 0.5))),
                                            hn::Mul(b, hn::Set(d, 0.5))));
        r = hn::IfThenElse(hn::And(neg, odd), hn::Neg(r), r);
        return hn::IfThenElse(hn::AndNot(integral, neg), hn::NaN(d), r);
    }
    template <class D, class V>
    static auto finite_nonzero(D d, const V* x) {
        auto ok = hn::And(hn::Ne(x[0], hn::Zero(d)), hn::IsFinite(x[0]));
        return hn::And(ok, hn::IsFinite(x[1]));
    }
    // Not ok, or |b log |a|| past 700 (or NaN: a marked lane's garbage logarithm).
    template <class D, class V, class M>
    static auto beyond_exp(D d, M ok, V b, V log_a) {
        return hn::Not(hn::And(ok, hn::Le(hn::Abs(hn::Mul(b, log_a)), hn::Set(d, 700.0))));
    }
};

// MegDNN's float modulo, C's fmod (the sign of a), as naive: with |a / b| < 2^24 the double
// quotient truncates to the integer fmod uses, and a - q b is exact (q b has at most 48
// significant bits, and so has the difference); fmod's sign is a's, zero included. Larger
// quotients, zero and non-finite operands take the scalar formula.
struct Mod {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        V q = hn::Trunc(hn::Div(a, b));
        return hn::CopySign(hn::NegMulAdd(q, b, a), a);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        auto ok = hn::And(hn::IsFinite(x[0]), hn::IsFinite(x[1]));
        ok = hn::And(ok, hn::Ne(x[1], hn::Zero(d)));
        ok = hn::And(ok, hn::Lt(hn::Abs(hn::Div(x[0], x[1])), hn::Set(d, 16777216.0)));
        return hn::Not(ok);
    }
};

// TAN, SIN and COS for |x| <= kTanReach: x = k pi/2 + r, |r| <= pi/4, with pi/2 in three parts
// (33, 33 and 53 bits: k P1 and k P2 are exact for k < 2^20, with or without FMA, so r keeps its
// relative accuracy next to the zeros and poles, the floats nearest a multiple of pi/2 included),
// sin(r) = r S(r^2) (degree 9, 2^-37.7) and cos(r) = C(r^2) (degree 10, 2^-43.8); k's quadrant
// picks and signs them: tan = s / c or -c / s (odd k), one division. Larger |x|, infinities and
// NaN take the scalar formula. SIN and COS ran Highway's double sin and cos (a four-part
// reduction and longer polynomials for double accuracy) at 0.6x PyTorch's float speed on AVX2.
constexpr double kTanReach = 1048576.0;  // 2^20
constexpr double kSinR[] = {0.9999999999954453, -0.1666666663042336, 0.008333328688325536,
                            -0.00019839177886356, 2.7171490289980913e-06};
constexpr double kCosR[] = {0.9999999999999338,     -0.4999999999927081,    0.04166666653364069,
                            -0.0013888879932114258, 2.4798843838320754e-05, -2.716795462379592e-07};
// x reduced by quarter turns: k (an integer in double) and r, with sin(r) and cos(r).
template <class V>
struct QuarterTurns {
    V k, s, c;
};
template <class D, class V>
HWY_INLINE QuarterTurns<V> quarter_turns(D d, V x) {
    const V k = hn::Round(hn::Mul(x, hn::Set(d, 0.63661977236758134)));  // 2 / pi
    V r = hn::NegMulAdd(k, hn::Set(d, 1.5707963267341256), x);
    r = hn::NegMulAdd(k, hn::Set(d, 6.077100506303966e-11), r);
    r = hn::NegMulAdd(k, hn::Set(d, 2.0222662487959506e-21), r);
    const V u = hn::Mul(r, r);
    return {k, hn::Mul(r, poly(d, u, kSinR)), poly(d, u, kCosR)};
}
// k's low bits as an integer lane: k + 1.5 * 2^52 is exact for |k| < 2^51 and holds k in the
// low bits of its mantissa.
template <class D, class V>
HWY_INLINE auto quadrant_bits(D d, V k) {
    return hn::BitCast(hn::RebindToSigned<D>(), hn::Add(k, hn::Set(d, 6755399441055744.0)));
}
struct Tan : Beyond<0> {
    Tan() : Beyond{kTanReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        const auto [k, s, c] = quarter_turns(d, x);
        const V h = hn::Mul(k, hn::Set(d, 0.5));
        const auto odd = hn::Ne(hn::Round(h), h);
        return hn::Div(hn::IfThenElse(odd, hn::Neg(c), s), hn::IfThenElse(odd, s, c));
    }
};
// sin(x) is s, c, -s, -c and cos(x) c, -s, -c, s for k = 0, 1, 2, 3 mod 4: the odd quadrants
// swap the two, and bit 1 of k (of k + 1 for cos) flips the sign.
template <bool kCos>
struct SinCos : Beyond<0> {
    SinCos() : Beyond{kTanReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        const hn::RebindToSigned<D> di;
        const auto [k, s, c] = quarter_turns(d, x);
        auto q = quadrant_bits(d, k);
        const auto odd = hn::RebindMask(d, hn::TestBit(q, hn::Set(di, 1)));
        if constexpr (kCos)
            q = hn::Add(q, hn::Set(di, 1));
        const auto sign = hn::And(hn::ShiftLeft<62>(q), hn::Set(di, INT64_MIN));
        const V v = kCos ? hn::IfThenElse(odd, s, c) : hn::IfThenElse(odd, c, s);
        return hn::Xor(v, hn::BitCast(d, sign));
    }
};

// atan2(a, b) = atan(a / b), plus or minus pi (a's sign) when b < 0, for finite nonzero operands
// (a / b of floats neither overflows nor underflows in double); zeros, whose signs pick among
// +-0, +-pi/2 and +-pi, and non-finite operands take the scalar formula.
struct Atan2 {
    template <class D, class V>
    V operator()(D d, V a, V b) const {
        V t = hn::Atan(d, hn::Div(a, b));
        V turn = hn::CopySign(hn::Set(d, std::numbers::pi), a);
        return hn::IfThenElse(hn::Lt(b, hn::Zero(d)), hn::Add(t, turn), t);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        auto ok = hn::And(hn::IsFinite(x[0]), hn::IsFinite(x[1]));
        ok = hn::And(ok, hn::And(hn::Ne(x[0], hn::Zero(d)), hn::Ne(x[1], hn::Zero(d))));
        return hn::Not(ok);
    }
};

// SIGMOID and SILU in float (16 lanes of AVX-512 where double gave 8, and exp_f32 where
// Highway's double exp spent most of the time: 2.9 ms per 2M floats against PyTorch's 0.85 on
// Zen 4). With e = exp(-|x|) <= 1 (exp_f32, within 1 ULP), sigmoid is 1 / (1 + e) at x >= 0 and
// e / (1 + e) below: one quotient either way, whose operands carry e's error and one rounding,
// so the result is within a few roundings of exact (elemwise_f32_max_ulp, measured on every
// float32 input by dnn/bench/elemwise_ulp.cpp). Saturated inputs are common (an LSTM's gates
// after some training), so they stay in vectors: -|x| is clamped to -87, exp_f32's range, which
// gives 1 for x > 87 as the exact sigmoid rounds to (from x = 17 on), and x * 1 = x for SILU; a
// vector with a lane below -87 (subnormal results, 0 below -103.3) or NaN is redone in double
// lanes (redo: naive's formula with Highway's double exp, NaN passed through). Such vectors took
// naive's scalar formula, lane by lane, before: 13x the time of a (16, 384) gate block.
template <bool kSilu>
struct SigmoidFamily {
    template <class D, class V>
    V operator()(D d, V x) const {
        const V y = sigmoid_f32(d, x);
        return kSilu ? hn::Mul(x, y) : y;
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::Ge(x[0], hn::Set(d, kSigmoidLow)));  // and NaN
    }
#if HWY_TARGET != HWY_SCALAR  // a one-lane vector has no halves: naive's formula per lane there
    template <class D, class V>
    V redo(D d, const V (&x)[1]) const {
        return in_double_lanes(d, x[0], [](auto dd, auto xd) {
            const auto one = hn::Set(dd, 1.0);
            const auto e = hn::Exp(dd, hn::Neg(hn::Abs(xd)));  // 0 for NaN: put back below
            auto y = hn::Div(hn::IfNegativeThenElse(xd, e, one), hn::Add(one, e));
            if constexpr (kSilu)
                y = hn::Mul(xd, y);
            return hn::IfThenElse(hn::IsNaN(xd), xd, y);
        });
    }
#endif
};
using SigmoidF = SigmoidFamily<false>;
using SiluF = SigmoidFamily<true>;

// TANH in float (Highway's double tanh in 4 double lanes of AVX2 ran at 0.9x PyTorch's float speed
// on Zen 3), on a = |x| with x's sign put back (-0 stays -0, and tanh(+-inf) = +-1 from the clamp
// below). Below kTanhSplit, a + a^3 P(a^2), P of degree 5 (scripts/fit_tanh.py, 2^-24 relative;
// the correction is at most 0.18 of the result, so its roundings and P's error reach the result
// scaled down that much). From there tanh(a) = (1 - e) / (1 + e), e = exp(-2a) (exp_f32, within 1
// ULP; -2a is exact, e <= 0.22): the roundings of 1 - e, of 1 + e and of the quotient would each
// cost the result up to half its ULP on top of its own rounding, so all three are carried: 1 - e =
// n + nl and 1 + e = h + l by Fast2Sum (e < 1), q = n / h and its residual n - q h exactly
// (product_error), and (n + nl) / (h + l) = q + ((n - q h) + nl - q l) / (h + l), the correction a
// few ULPs of q, for which the 12-bit reciprocal of h is accurate enough; its FMA rounds the result
// once. e's own error, scaled by 2e / (1 + e)^2, is what remains: measured on every positive float
// against the exact tanh, at most 0.83 ULP away at the AVX2 and AVX-512 targets (0.87 on targets
// without FMA), so each result is one of the two floats around the exact value, as naive's is:
// within one of naive's (dnn/bench/elemwise_ulp.cpp, every float32 input). Without the carries the
// kernel took a quarter less time but was 1.51 ULP from exact and 2 from naive. a is clamped to 10,
// where e = 2e-9 and the quotient rounds to 1 (it does from 9.01 on). NaN takes naive's formula.
struct TanhF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return tanh_f32(d, x);
    }
    template <class D, class V>
    auto special(D, const V* x) const {
        return hn::IsNaN(x[0]);
    }
};

// POW with one exponent for every element (a Python scalar: `x ** 2`, `x ** 0.5`), without
// exp and log: 0.03x PyTorch's speed for `x ** 2` on 2M floats before. a^2 is a float product,
// naive's bits (a^2 is exact in double); a^-1 a float division, naive's bits too (a quotient
// rounded to double and then to float rounds as it would to float at once: 53 >= 2 * 24 + 2);
// a^3 in float where FMA is native (PowCube); other integers |b| <= kPowIntReach are repeated
// squaring in double and, below zero, one reciprocal: at most 2 log2|b| + 1 roundings of 2^-53,
// so within POW's one ULP, and pow's zeros, infinities and NaN come out as C99 gives them (an odd
// power keeps -0's and -inf's sign; an overflow is inf and its reciprocal 0 either way). a^0.5
// is the float square root (correctly rounded, as naive's double pow rounded once is within a
// ULP of), with pow's +0 for -0 and +inf for -inf. Other exponents take the exp/log formula.
constexpr int kPowIntReach = 64;
struct PowSquare : NoSpecial {
    template <class D, class V>
    V operator()(D, V a, V) const {
        return hn::Mul(a, a);
    }
};
struct PowHalf : NoSpecial {
    template <class D, class V>
    V operator()(D d, V a, V) const {
        const V r = hn::Add(hn::Sqrt(a), hn::Zero(d));  // sqrt(-0) = -0; + 0 makes it +0
        return hn::IfThenElse(hn::Eq(a, hn::Neg(hn::Inf(d))), hn::Inf(d), r);
    }
};
struct PowReciprocal : NoSpecial {
    template <class D, class V>
    V operator()(D d, V a, V) const {
        return hn::Div(hn::Set(d, 1.0f), a);
    }
};
#if HWY_NATIVE_FMA
// a^3 without double lanes, which held `x ** 3` at 0.45x PyTorch's speed: a^2 = h + l exactly
// (l = fma(a, a, -h)), so a^3 = h a + l a, and fma(h, a, l a) rounds that once, off only by l a's
// rounding: under 2^-48 of a^3 where l a is a normal float, so the result is the float nearest
// a^3 except within 2^-48 (relative) of a midpoint between two floats, as naive's (a^3 rounded to
// double, then to float) is except within 2^-53. Where l a is subnormal (|a| < 2^-33) its
// rounding is at most half the subnormals' step, 2^-150, no more than half the result's ULP: the
// result is within one ULP of a^3, naive's within half of one, so they are at most one ULP apart
// there too. bench/elemwise_ulp.cpp's powb=3 over every float32 base: 4197976 (0.1%) one ULP
// from naive, none further. l a is not finite only where a^3 overflows (|l a| <= 2^-24 |a^3|
// overflows past 2^152, h past 2^128) or a is: there the fma's inf could have l a's sign or be
// NaN, and a inf is the answer (NaN for NaN). Zeros keep a's sign.
struct PowCube : NoSpecial {
    template <class D, class V>
    V operator()(D d, V a, V) const {
        const V h = hn::Mul(a, a);
        const V la = hn::Mul(hn::MulSub(a, a, h), a);
        return hn::IfThenElse(hn::IsFinite(la), hn::MulAdd(h, a, la), hn::Mul(a, hn::Inf(d)));
    }
};

// PowCube over a dense base, four vectors a step: where every |a| of the step is below 2^50 (and
// so not inf or NaN), l a is finite (|l a| <= 2^-24 |a|^3 < 2^126), so PowCube's blend keeps
// fma(h, a, l a) in every lane, and the step stores that without computing the blend; a step
// holding a larger base takes PowCube whole. The same bits either way, with two of the seven
// multiplier-port operations a vector fewer: at two threads, where the data comes from L3 twice
// as fast, `x ** 3` on 2M floats was bound by them (0.168 ms against `x ** 2`'s 0.126).
HWY_INLINE void run_pow_cube(const ElemwiseSrc* s, float* dst, size_t n) {
    const hn::ScalableTag<float> d;
    const hn::RebindToSigned<decltype(d)> di;
    const size_t lanes = hn::Lanes(d);
    const float* a = static_cast<const float*>(s[0].p);
    // |a|'s bits as int32 order |a| (NaN above inf): all below 2^50's in one signed maximum.
    const auto magnitude = hn::Set(di, 0x7fffffff), limit = hn::Set(di, 0x58800000);
    size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        hn::Vec<decltype(d)> x[4], r[4];
        auto largest = hn::Zero(di);
        for (size_t k = 0; k < 4; ++k) {
            x[k] = hn::LoadU(d, a + i + k * lanes);
            largest = hn::Max(largest, hn::And(hn::BitCast(di, x[k]), magnitude));
            const auto h = hn::Mul(x[k], x[k]);
            r[k] = hn::MulAdd(h, x[k], hn::Mul(hn::MulSub(x[k], x[k], h), x[k]));
        }
        if (!hn::AllTrue(di, hn::Lt(largest, limit)))
            for (size_t k = 0; k < 4; ++k)
                r[k] = PowCube()(d, x[k], x[k]);
        for (size_t k = 0; k < 4; ++k)
            hn::StoreU(r[k], d, dst + i + k * lanes);
    }
    for (; i + lanes <= n; i += lanes) {
        const auto x = hn::LoadU(d, a + i);
        hn::StoreU(PowCube()(d, x, x), d, dst + i);
    }
    for (; i < n; ++i)
        scalar_at(Mode::POW, s, 2, dst, i);
}
#endif
struct PowInt : NoSpecial {
    int b;
    template <class D, class V>
    V operator()(D d, V a, V) const {
        V r = hn::Set(d, 1.0), p = a;
        for (int k = b < 0 ? -b : b; k; k >>= 1) {
            if (k & 1)
                r = hn::Mul(r, p);
            if (k > 1)
                p = hn::Mul(p, p);
        }
        return b < 0 ? hn::Div(hn::Set(d, 1.0), r) : r;
    }
};

// POW of a broadcast exponent b that one of the forms above covers; false for other b.
bool pow_by_constant(const ElemwiseSrc* s, float* dst, size_t n) {
    const float b = *static_cast<const float*>(s[1].p);
    if (b == 2.0f)
        return run_float_plain<2>(Mode::POW, s, dst, n, PowSquare()), true;
    if (b == 0.5f)
        return run_float_plain<2>(Mode::POW, s, dst, n, PowHalf()), true;
    if (b == -1.0f)
        return run_float_plain<2>(Mode::POW, s, dst, n, PowReciprocal()), true;
#if HWY_NATIVE_FMA
    if (b == 3.0f && !s[0].broadcast)
        return run_pow_cube(s, dst, n), true;
    if (b == 3.0f)
        return run_float_plain<2>(Mode::POW, s, dst, n, PowCube()), true;
#endif
    if (b == std::trunc(b) && std::abs(b) <= kPowIntReach) {
        PowInt f;
        f.b = static_cast<int>(b);
        return run_double<2>(Mode::POW, s, dst, n, f), true;
    }
    return false;
}

// Returns false for a mode this file does not compute.
bool ElemwiseMath(Mode mode, const ElemwiseSrc* s, float* dst, size_t n) {
    switch (mode) {
        case Mode::EXP:
            return run_float_special<1>(mode, s, dst, n, ExpF()), true;
        case Mode::POW:
            if (n > 0 && s[1].broadcast && pow_by_constant(s, dst, n))
                return true;
            return run_double<2>(mode, s, dst, n, Pow()), true;
        case Mode::MOD:
            return run_double<2>(mode, s, dst, n, Mod()), true;
        case Mode::ATAN2:
            return run_double<2>(mode, s, dst, n, Atan2()), true;
        case Mode::TAN:
            return run_double<1>(mode, s, dst, n, Tan()), true;
        case Mode::SIN:
            return run_double<1>(mode, s, dst, n, SinCos<false>()), true;
        case Mode::COS:
            return run_double<1>(mode, s, dst, n, SinCos<true>()), true;
        case Mode::ERF:
#if HWY_NATIVE_FMA
            return run_float_special<1>(mode, s, dst, n, ErfF()), true;
#else
            return run_double<1>(mode, s, dst, n, Erf()), true;
#endif
        case Mode::ERFC:
#if HWY_NATIVE_FMA
            return run_float_special<1>(mode, s, dst, n, ErfcF()), true;
#else
            return run_double<1>(mode, s, dst, n, Erfc()), true;
#endif
        case Mode::ERFINV:
#if HWY_NATIVE_FMA
            return run_float_special<1>(mode, s, dst, n, ErfInvF()), true;
#else
            return run_double<1>(mode, s, dst, n, ErfInv()), true;
#endif
        case Mode::ERFCINV:
            return run_double<1>(mode, s, dst, n, ErfcInv()), true;
        case Mode::GELU:
            return run_float_special<1>(mode, s, dst, n, Gelu()), true;
        case Mode::GELU_GRAD:
            return run_float_special<2>(mode, s, dst, n, GeluGrad()), true;
        case Mode::SIGMOID:
            return run_float_special<1>(mode, s, dst, n, SigmoidF()), true;
        case Mode::SILU:
            return run_float_special<1>(mode, s, dst, n, SiluF()), true;
        case Mode::TANH:
            return run_float_special<1>(mode, s, dst, n, TanhF()), true;
        case Mode::LOG:
            return run_float_special<1>(mode, s, dst, n, LogF()), true;
        case Mode::LOG1P:
            return run_float_special<1>(mode, s, dst, n, Log1pF()), true;
        case Mode::EXPM1:
            return run_float_special<1>(mode, s, dst, n, Expm1F()), true;
        case Mode::ATANH:
            return run_float_special<1>(mode, s, dst, n, AtanhF()), true;
        case Mode::SOFTPLUS:
            return run_float_special<1>(mode, s, dst, n, SoftplusF()), true;
        case Mode::LOGSIGMOID:
            return run_float_special<1>(mode, s, dst, n, LogSigmoidF()), true;
        default:
            return false;
    }
}

// int32 / int32 -> float32 through double, as naive: both operands are exact in double.
void TrueDivI32(const ElemwiseSrc* s, float* dst, size_t n) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<int32_t, decltype(dd)> di;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        auto a = hn::PromoteTo(dd, load(di, s[0], i));
        auto b = hn::PromoteTo(dd, load(di, s[1], i));
        hn::StoreU(hn::DemoteTo(df, hn::Div(a, b)), df, dst + i);
    }
    const auto at = [&](size_t k, size_t j) {
        const auto* p = static_cast<const int32_t*>(s[k].p);
        return static_cast<double>(s[k].broadcast ? *p : p[j]);
    };
    for (; i < n; ++i)
        dst[i] = static_cast<float>(at(0, i) / at(1, i));
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ElemwiseMath);
HWY_EXPORT(TrueDivI32);

bool elemwise_math_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                       void* dst, size_t n) {
    if (data == dtype::Float32 && dst_dtype == dtype::Float32)
        return HWY_DYNAMIC_DISPATCH(ElemwiseMath)(mode, srcs, static_cast<float*>(dst), n);
    if (mode == elemwise::Mode::TRUE_DIV && data == dtype::Int32 && dst_dtype == dtype::Float32) {
        if (n > 0)
            HWY_DYNAMIC_DISPATCH(TrueDivI32)(srcs, static_cast<float*>(dst), n);
        return true;
    }
    return false;
}

int elemwise_f32_max_ulp(elemwise::Mode mode) {
    using M = elemwise::Mode;
    switch (mode) {
        case M::EXP:
        case M::POW:
        case M::ATAN2:
        case M::TAN:
        case M::SIN:
        case M::COS:
        case M::ERF:
        case M::ERFC:
        case M::ERFINV:
        case M::ERFCINV:
            return 1;
        case M::TANH:
            return 1;
        case M::SIGMOID:
            return 2;
        case M::SILU:
            return 3;
        case M::LOG:
        case M::LOG1P:
        case M::EXPM1:
        case M::ATANH:
            return 1;
        case M::SOFTPLUS:
        case M::LOGSIGMOID:
            return 2;
        case M::GELU:
        case M::GELU_GRAD:
            return 7;
        default:
            return 0;
    }
}

}  // namespace neomeg::dnn::x86
#endif
