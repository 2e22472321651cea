// The float32 Elemwise modes that Highway's math library has no function for, compiled once per
// instruction set like elemwise_hwy.cpp: POW as exp(b log a), ATAN2 from atan, TAN as sin / cos,
// the error function family after FreeBSD's (fdlibm's) erf/erfc, whose coefficients are taken here,
// the inverse error functions as Newton steps on those from M. Giles' start (the steps naive
// takes); all in double, rounded once. MOD is exact (a - trunc(a / b) b is exact in double for
// float operands whose quotient is below 2^24). EXP, GELU and its gradient run in float (see Gelu
// and elemwise_math_hwy.h), and TRUE_DIV of int32 divides in double like naive. Lanes outside a
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
// clang-format on

#include <algorithm>
#include <cstdint>
#include <numbers>

#include "src/x86/elemwise_math_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using Mode = elemwise::Mode;

// c[0] + s (c[1] + s (c[2] + ...)).
template <class D, class V, class T, size_t N>
HWY_INLINE V poly(D d, V s, const T (&c)[N]) {
    V r = hn::Set(d, c[N - 1]);
    for (size_t k = N - 1; k-- > 0;)
        r = hn::MulAdd(r, s, hn::Set(d, c[k]));
    return r;
}

// fdlibm's erf/erfc coefficients: erf(x) = x + x P/Q (x^2) below 0.84375, erx + P/Q (x - 1) below
// 1.25, and above, erfc(x) = exp(-x^2 - 0.5625 + R/S (1 / x^2)) / x, R/S in two ranges split at
// 1 / 0.35.
constexpr double kErx = 8.45062911510467529297e-01;
constexpr double kPP[] = {1.28379167095512558561e-01, -3.25042107247001499370e-01,
                          -2.84817495755985104766e-02, -5.77027029648944159157e-03,
                          -2.37630166566501626084e-05};
constexpr double kQQ[] = {1.0,
                          3.97917223959155352819e-01,
                          6.50222499887672944485e-02,
                          5.08130628187576562776e-03,
                          1.32494738004321644526e-04,
                          -3.96022827877536812320e-06};
constexpr double kPA[] = {-2.36211856075265944077e-03, 4.14856118683748331666e-01,
                          -3.72207876035701323847e-01, 3.18346619901161753674e-01,
                          -1.10894694282396677476e-01, 3.54783043256182359371e-02,
                          -2.16637559486879084300e-03};
constexpr double kQA[] = {1.0,
                          1.06420880400844228286e-01,
                          5.40397917702171048937e-01,
                          7.18286544141962662868e-02,
                          1.26171219808761642112e-01,
                          1.36370839120290507362e-02,
                          1.19844998467991074170e-02};
constexpr double kRA[] = {-9.86494403484714822705e-03, -6.93858572707181764372e-01,
                          -1.05586262253232909814e+01, -6.23753324503260060396e+01,
                          -1.62396669462573470355e+02, -1.84605092906711035994e+02,
                          -8.12874355063065934246e+01, -9.81432934416914548592e+00};
constexpr double kSA[] = {1.0,
                          1.96512716674392571292e+01,
                          1.37657754143519042600e+02,
                          4.34565877475229228821e+02,
                          6.45387271733267880336e+02,
                          4.29008140027567833386e+02,
                          1.08635005541779435134e+02,
                          6.57024977031928170135e+00,
                          -6.04244152148580987438e-02};
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

// erf(x), or erfc(x) when kComplement, for finite |x| <= kErfReach. Each of the three ranges is
// computed only when a lane falls in it. A lane takes one rational function, that of its range:
// the numerators and denominators are chosen per lane and divided once (a double division is the
// slowest step: five of them a vector of mixed ranges took half of ERF's time on Zen 5), which
// gives each lane the quotient its range's own division gives.
template <bool kComplement, class D, class V>
HWY_INLINE V erf_family(D d, V x) {
    const V one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
    const V ax = hn::Abs(x);
    const auto neg = hn::Lt(x, hn::Zero(d));
    const auto in_a = hn::Lt(ax, hn::Set(d, 0.84375));
    const auto in_b = hn::AndNot(in_a, hn::Lt(ax, hn::Set(d, 1.25)));
    const auto in_c = hn::Not(hn::Or(in_a, in_b));
    const bool any_a = !hn::AllFalse(d, in_a), any_b = !hn::AllFalse(d, in_b);
    const bool any_c = !hn::AllFalse(d, in_c);
    V num = hn::Zero(d), den = one;
    if (any_a) {
        num = hn::IfThenElse(in_a, poly(d, hn::Mul(x, x), kPP), num);
        den = hn::IfThenElse(in_a, poly(d, hn::Mul(x, x), kQQ), den);
    }
    if (any_b) {
        V s = hn::Sub(ax, one);
        num = hn::IfThenElse(in_b, poly(d, s, kPA), num);
        den = hn::IfThenElse(in_b, poly(d, s, kQA), den);
    }
    if (any_c) {
        V s = hn::Div(one, hn::Mul(ax, ax));
        auto near = hn::Lt(ax, hn::Set(d, 1 / 0.35));
        V n = poly(d, s, kRA), m = poly(d, s, kSA);
        // Far lanes (|x| >= 1 / 0.35) are rare in most data: their polynomials only where the
        // range holds one.
        if (!hn::AllTrue(d, hn::Or(near, hn::Not(in_c)))) {
            n = hn::IfThenElse(near, n, poly(d, s, kRB));
            m = hn::IfThenElse(near, m, poly(d, s, kSB));
        }
        num = hn::IfThenElse(in_c, n, num);
        den = hn::IfThenElse(in_c, m, den);
    }
    const V y = hn::Div(num, den);
    V r = hn::Zero(d);
    if (any_a) {
        V v = hn::MulAdd(x, y, x);
        if constexpr (kComplement) {
            // Above 1/4, 1 - v would cancel: 0.5 - (x y + (x - 0.5)) keeps the low bits.
            V far = hn::Sub(half, hn::Add(hn::Mul(x, y), hn::Sub(x, half)));
            v = hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0.25)), hn::Sub(one, v), far);
        }
        r = hn::IfThenElse(in_a, v, r);
    }
    if (any_b) {
        V e = hn::Add(hn::Set(d, kErx), y);
        V v = kComplement ? hn::IfThenElse(neg, hn::Add(one, e),
                                           hn::Sub(hn::Sub(one, hn::Set(d, kErx)), y))
                          : hn::CopySign(e, x);
        r = hn::IfThenElse(in_b, v, r);
    }
    if (any_c) {
        // fdlibm splits exp(-x^2 - 0.5625 + R/S) in two exponentials so that the double keeps
        // all its bits; here the result is a float, and x^2 <= kErfReach^2 rounded in the one
        // exponent costs at most 676 * 2^-53 relative (1e-13, against a float's 6e-8 half ULP),
        // for half the exponentials (ERF on N(0, 1) data spent most of its time in them).
        V q = hn::Div(hn::Exp(d, hn::Sub(hn::Sub(y, hn::Set(d, 0.5625)), hn::Mul(ax, ax))), ax);
        V v = kComplement ? hn::IfThenElse(neg, hn::Sub(hn::Set(d, 2.0), q), q)
                          : hn::CopySign(hn::Sub(one, q), x);
        r = hn::IfThenElse(in_c, v, r);
    }
    return r;
}

template <class D, class V>
HWY_INLINE V erf(D d, V x) {
    return erf_family<false>(d, x);
}
template <class D, class V>
HWY_INLINE V erfc(D d, V x) {
    return erf_family<true>(d, x);
}

// ERF and ERFC over a run with each range computed only on its own lanes: a block's vectors take
// the inner ranges (|x| < 1.25) in place, their tail lanes are compressed into dense vectors,
// computed by the tail's formula and written back by index. Every lane gets the operations
// erf_family gives it (the same numerator, denominator and division), so the bits are
// erf_family's; a vector of N(0, 1) data almost always holds a tail lane, whose formula (two
// divisions, an exponential) erf_family computes for all its lanes. Lanes f.special marks are
// redone by naive's formula last; the run's last partial block goes to run_double.
constexpr size_t kErfBlock = 256;

template <bool kComplement, class D, class V>
HWY_INLINE V erf_inner(D d, V x) {
    const V one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
    const V ax = hn::Abs(x);
    const auto in_a = hn::Lt(ax, hn::Set(d, 0.84375));
    V num = poly(d, hn::Mul(x, x), kPP), den = poly(d, hn::Mul(x, x), kQQ);
    if (!hn::AllTrue(d, in_a)) {
        V s = hn::Sub(ax, one);
        num = hn::IfThenElse(in_a, num, poly(d, s, kPA));
        den = hn::IfThenElse(in_a, den, poly(d, s, kQA));
    }
    const V y = hn::Div(num, den);
    V a = hn::MulAdd(x, y, x);
    if constexpr (kComplement) {
        V far = hn::Sub(half, hn::Add(hn::Mul(x, y), hn::Sub(x, half)));
        a = hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0.25)), hn::Sub(one, a), far);
    }
    const V e = hn::Add(hn::Set(d, kErx), y);
    const V b = kComplement ? hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Add(one, e),
                                             hn::Sub(hn::Sub(one, hn::Set(d, kErx)), y))
                            : hn::CopySign(e, x);
    return hn::IfThenElse(in_a, a, b);
}

template <bool kComplement, class D, class V>
HWY_INLINE V erf_tail(D d, V x) {
    const V one = hn::Set(d, 1.0);
    const V ax = hn::Abs(x);
    V s = hn::Div(one, hn::Mul(ax, ax));
    auto near = hn::Lt(ax, hn::Set(d, 1 / 0.35));
    V n = poly(d, s, kRA), m = poly(d, s, kSA);
    if (!hn::AllTrue(d, near)) {
        n = hn::IfThenElse(near, n, poly(d, s, kRB));
        m = hn::IfThenElse(near, m, poly(d, s, kSB));
    }
    const V y = hn::Div(n, m);
    V q = hn::Div(hn::Exp(d, hn::Sub(hn::Sub(y, hn::Set(d, 0.5625)), hn::Mul(ax, ax))), ax);
    return kComplement ? hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Sub(hn::Set(d, 2.0), q), q)
                       : hn::CopySign(hn::Sub(one, q), x);
}

template <bool kComplement, class F>
HWY_INLINE void run_erf(elemwise::Mode mode, const ElemwiseSrc* s, float* dst, size_t n, F f) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::RebindToSigned<decltype(dd)> di;
    const size_t lanes = hn::Lanes(dd);
    // (n < kErfBlock first: elemwise_f32_supported asks with no operands and n = 0.)
    if (n < kErfBlock || s[0].broadcast || kErfBlock % lanes != 0) {
        run_double<1>(mode, s, dst, n, f);
        return;
    }
    const auto* src = static_cast<const float*>(s[0].p);
    // A block's tail lanes: values and element indices, with a vector's room past the last
    // (CompressStore may write whole vectors).
    HWY_ALIGN double tail_x[kErfBlock + hn::MaxLanes(dd)];
    HWY_ALIGN int64_t tail_i[kErfBlock + hn::MaxLanes(dd)];
    HWY_ALIGN float tail_y[hn::MaxLanes(dd)];
    size_t i = 0;
    for (; i + kErfBlock <= n; i += kErfBlock) {
        size_t tails = 0, marks = 0;
        uint32_t marked[kErfBlock];  // the first elements of vectors holding a marked lane
        for (size_t k = 0; k < kErfBlock / lanes; ++k) {
            const size_t at = i + k * lanes;
            if (at % 16 == 0) {
                hwy::Prefetch(src + at + kPrefetchAhead);
                hwy::Prefetch(dst + at + kPrefetchAhead);
            }
            const auto x = hn::PromoteTo(dd, hn::LoadU(df, src + at));
            const auto tail = hn::Ge(hn::Abs(x), hn::Set(dd, 1.25));
            // A vector wholly in the tail (data of large |x|) is computed in place.
            if (hn::AllTrue(dd, tail)) {
                hn::StoreU(hn::DemoteTo(df, erf_tail<kComplement>(dd, x)), df, dst + at);
            } else {
                hn::StoreU(hn::DemoteTo(df, erf_inner<kComplement>(dd, x)), df, dst + at);
            }
            if (!hn::AllFalse(dd, tail) && !hn::AllTrue(dd, tail)) {
                hn::CompressStore(x, tail, dd, tail_x + tails);
                tails += hn::CompressStore(hn::Iota(di, static_cast<int64_t>(at)),
                                           hn::RebindMask(di, tail), di, tail_i + tails);
            }
            const hn::Vec<decltype(dd)> xs[1] = {x};
            if (!hn::AllFalse(dd, f.special(dd, xs)))
                marked[marks++] = static_cast<uint32_t>(k * lanes);
        }
        for (size_t t = 0; t < tails; t += lanes) {
            // Lanes past the last tail lane compute a harmless 2 and are not written.
            const auto x = hn::IfThenElse(hn::FirstN(dd, tails - t), hn::LoadU(dd, tail_x + t),
                                          hn::Set(dd, 2.0));
            hn::StoreU(hn::DemoteTo(df, erf_tail<kComplement>(dd, x)), df, tail_y);
            for (size_t k = 0; k < lanes && t + k < tails; ++k)
                dst[tail_i[t + k]] = tail_y[k];
        }
        for (size_t m = 0; m < marks; ++m)
            for (size_t j = i + marked[m]; j < i + marked[m] + lanes; ++j)
                scalar_at(mode, s, 1, dst, j);
    }
    if (i < n) {
        ElemwiseSrc rest = {src + i, false};
        run_double<1>(mode, &rest, dst + i, n - i, f);
    }
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
        return erf(d, x);
    }
};
struct Erfc : Beyond<0> {
    Erfc() : Beyond{kErfReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        return erfc(d, x);
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
    const V c = hn::Mul(a, hn::Set(d, 4097.0f));  // 2^12 + 1 splits a into two 12-bit halves
    const V hi = hn::Sub(c, hn::Sub(c, a));
    const V lo = hn::Sub(a, hi);
    const V err = hn::Add(hn::Sub(hn::Mul(hi, hi), h), hn::Mul(hn::Add(hi, hi), lo));
    return hn::Add(err, hn::Mul(lo, lo));
#endif
}

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

// Giles' single-precision erfinv(t) ~ t p(w), w = -log(1 - t^2), as dnn/src/common's giles_start.
template <class D, class V>
HWY_INLINE V giles_start(D d, V t, V w) {
    constexpr double kLow[] = {1.50140941,     0.246640727,    -0.00417768164,
                               -0.00125372503, 0.00021858087,  -4.39150654e-06,
                               -3.5233877e-06, 3.43273939e-07, 2.81022636e-08};
    constexpr double kHigh[] = {2.83297682,    1.00167406,     0.00943887047,
                                -0.0076224613, 0.00573950773,  -0.00367342844,
                                0.00134934322, 0.000100950558, -0.000200214257};
    auto low = hn::Lt(w, hn::Set(d, 5.0));
    V p = hn::IfThenElse(low, poly(d, hn::Sub(w, hn::Set(d, 2.5)), kLow),
                         poly(d, hn::Sub(hn::Sqrt(w), hn::Set(d, 3.0)), kHigh));
    return hn::Mul(p, t);
}

constexpr double kTwoOverSqrtPi = 2.0 * std::numbers::inv_sqrtpi;
// Giles' start is within about 1e-6 of the root; Newton doubles the digits each step.
constexpr int kNewtonSteps = 3;

// x >= 0 with erfc(x) = y, for y in [kErfcinvLeast, 1]: Newton on erfc from Giles' start.
constexpr double kErfcinvLeast = 5e-8;
template <class D, class V>
HWY_INLINE V erfcinv_upper(D d, V y) {
    const V one = hn::Set(d, 1.0);
    V w = hn::Neg(hn::Log(d, hn::Mul(y, hn::Sub(hn::Set(d, 2.0), y))));
    V x = giles_start(d, hn::Sub(one, y), w);
    for (int it = 0; it < kNewtonSteps; ++it) {
        V slope = hn::Mul(hn::Set(d, -kTwoOverSqrtPi), hn::Exp(d, hn::Neg(hn::Mul(x, x))));
        x = hn::Sub(x, hn::Div(hn::Sub(erfc(d, x), y), slope));
    }
    return x;
}

// Lanes of y outside (0, 2) less kErfcinvLeast at both ends, NaN included.
struct ErfcInv {
    template <class D, class V>
    V operator()(D d, V y) const {
        auto upper = hn::Gt(y, hn::Set(d, 1.0));
        V x = erfcinv_upper(d, hn::IfThenElse(upper, hn::Sub(hn::Set(d, 2.0), y), y));
        return hn::IfThenElse(upper, hn::Neg(x), x);
    }
    template <class D, class V>
    auto special(D d, const V* y) const {
        const V least = hn::Set(d, kErfcinvLeast);
        return hn::Not(hn::And(hn::Ge(y[0], least), hn::Ge(hn::Sub(hn::Set(d, 2.0), y[0]), least)));
    }
};

// Near zero Newton on erf keeps the relative accuracy; above 1/2, erfcinv of 1 - |y| (exact).
struct ErfInv {
    template <class D, class V>
    V operator()(D d, V y) const {
        const V one = hn::Set(d, 1.0);
        V x = giles_start(d, y, hn::Neg(hn::Log1p(d, hn::Neg(hn::Mul(y, y)))));
        for (int it = 0; it < kNewtonSteps; ++it) {
            V slope = hn::Mul(hn::Set(d, kTwoOverSqrtPi), hn::Exp(d, hn::Neg(hn::Mul(x, x))));
            x = hn::Sub(x, hn::Div(hn::Sub(erf(d, x), y), slope));
        }
        auto tail = hn::Gt(hn::Abs(y), hn::Set(d, 0.5));
        if (hn::AllFalse(d, tail))
            return x;
        // Lanes not in the tail ask for erfcinv(1 / 2), harmless, instead of erfcinv(1 - y).
        V t = hn::IfThenElse(tail, hn::Sub(one, hn::Abs(y)), hn::Set(d, 0.5));
        return hn::IfThenElse(tail, hn::CopySign(erfcinv_upper(d, t), y), x);
    }
    template <class D, class V>
    auto special(D d, const V* y) const {
        return hn::Not(hn::Lt(hn::Abs(y[0]), hn::Set(d, 1.0)));
    }
};

// a^b = exp(b log |a|) for finite nonzero a and b with |b log |a|| <= 700 (exp stays finite): a
// negative a gives that with the sign of (-1)^b for an integer b, NaN for any other b, as pow.
// Zero and non-finite operands take the scalar formula.
struct Pow {
    template <class D, class V>
    V operator()(D d, V a, V b) const {
        return from_log(d, a, b, hn::Log(d, hn::Abs(a)));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        const auto ok = finite_nonzero(d, x);
        V a = hn::IfThenElse(ok, hn::Abs(x[0]), hn::Set(d, 1.0));
        return beyond_exp(d, ok, x[1], hn::Log(d, a));
    }
    // One logarithm for both: where ok, |a| is what special's substitute is; elsewhere the lane
    // is marked whatever the logarithm.
    template <class D, class V>
    V with_special(D d, const V (&x)[2], hn::Mask<D>& marked) const {
        const V l = hn::Log(d, hn::Abs(x[0]));
        marked = beyond_exp(d, finite_nonzero(d, x), x[1], l);
        return from_log(d, x[0], x[1], l);
    }

private:
    template <class D, class V>
    static V from_log(D d, V a, V b, V log_a) {
        V r = hn::Exp(d, hn::Mul(b, log_a));
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
    // Not ok, or |b log |a|| past 700.
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

// sin / cos where Highway's double sin and cos are accurate (|x| <= 39000) and cos is not so
// small that its absolute error shows in the quotient.
struct Tan {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Div(hn::Sin(d, x), hn::Cos(d, x));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        V safe = hn::IfThenElse(outside(d, x[0], 39000.0), hn::Zero(d), x[0]);
        return hn::Or(outside(d, x[0], 39000.0),
                      hn::Lt(hn::Abs(hn::Cos(d, safe)), hn::Set(d, 1e-3)));
    }
    // One cosine for both: inside the range it is special's; outside, the lane is marked anyway.
    template <class D, class V>
    V with_special(D d, const V (&x)[1], hn::Mask<D>& marked) const {
        const V c = hn::Cos(d, x[0]);
        marked = hn::Or(outside(d, x[0], 39000.0), hn::Lt(hn::Abs(c), hn::Set(d, 1e-3)));
        return hn::Div(hn::Sin(d, x[0]), c);
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

// Returns false for a mode this file does not compute.
bool ElemwiseMath(Mode mode, const ElemwiseSrc* s, float* dst, size_t n) {
    switch (mode) {
        case Mode::EXP:
            return run_float_special<1>(mode, s, dst, n, ExpF()), true;
        case Mode::POW:
            return run_double<2>(mode, s, dst, n, Pow()), true;
        case Mode::MOD:
            return run_double<2>(mode, s, dst, n, Mod()), true;
        case Mode::ATAN2:
            return run_double<2>(mode, s, dst, n, Atan2()), true;
        case Mode::TAN:
            return run_double<1>(mode, s, dst, n, Tan()), true;
        case Mode::ERF:
            return run_erf<false>(mode, s, dst, n, Erf()), true;
        case Mode::ERFC:
            return run_erf<true>(mode, s, dst, n, Erfc()), true;
        case Mode::ERFINV:
            return run_double<1>(mode, s, dst, n, ErfInv()), true;
        case Mode::ERFCINV:
            return run_double<1>(mode, s, dst, n, ErfcInv()), true;
        case Mode::GELU:
            return run_float_special<1>(mode, s, dst, n, Gelu()), true;
        case Mode::GELU_GRAD:
            return run_float_special<2>(mode, s, dst, n, GeluGrad()), true;
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
        case M::ERF:
        case M::ERFC:
        case M::ERFINV:
        case M::ERFCINV:
            return 1;
        case M::GELU:
        case M::GELU_GRAD:
            return 7;
        default:
            return 0;
    }
}

}  // namespace neomeg::dnn::x86
#endif
