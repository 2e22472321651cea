// The float32 Elemwise modes that Highway's math library has no function for, compiled once per
// instruction set like elemwise_hwy.cpp: POW as exp(b log a), ATAN2 from atan, TAN as sin / cos,
// the error function family after FreeBSD's (fdlibm's) erf/erfc, whose coefficients are taken here,
// the inverse error functions as Newton steps on those from M. Giles' start (the steps naive
// takes), GELU and its gradient (one rational function per lane, see normal_cdf); all in double,
// rounded once. MOD is exact (a - trunc(a / b) b is exact in double for float operands whose
// quotient is below 2^24). EXP runs in float (see elemwise_math_hwy.h), and TRUE_DIV of int32
// divides in double like naive. Lanes outside a formula's domain or accurate range take naive's
// scalar formula.
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
template <class D, class V, size_t N>
HWY_INLINE V poly(D d, V s, const double (&c)[N]) {
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
// computed only when a lane falls in it.
template <bool kComplement, class D, class V>
HWY_INLINE V erf_family(D d, V x) {
    const V one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
    const V ax = hn::Abs(x);
    const auto neg = hn::Lt(x, hn::Zero(d));
    const auto in_a = hn::Lt(ax, hn::Set(d, 0.84375));
    const auto in_b = hn::AndNot(in_a, hn::Lt(ax, hn::Set(d, 1.25)));
    const auto in_c = hn::Not(hn::Or(in_a, in_b));
    V r = hn::Zero(d);
    if (!hn::AllFalse(d, in_a)) {
        V y = hn::Div(poly(d, hn::Mul(x, x), kPP), poly(d, hn::Mul(x, x), kQQ));
        V v = hn::MulAdd(x, y, x);
        if constexpr (kComplement) {
            // Above 1/4, 1 - v would cancel: 0.5 - (x y + (x - 0.5)) keeps the low bits.
            V far = hn::Sub(half, hn::Add(hn::Mul(x, y), hn::Sub(x, half)));
            v = hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0.25)), hn::Sub(one, v), far);
        }
        r = hn::IfThenElse(in_a, v, r);
    }
    if (!hn::AllFalse(d, in_b)) {
        V s = hn::Sub(ax, one);
        V pq = hn::Div(poly(d, s, kPA), poly(d, s, kQA));
        V e = hn::Add(hn::Set(d, kErx), pq);
        V v = kComplement ? hn::IfThenElse(neg, hn::Add(one, e),
                                           hn::Sub(hn::Sub(one, hn::Set(d, kErx)), pq))
                          : hn::CopySign(e, x);
        r = hn::IfThenElse(in_b, v, r);
    }
    if (!hn::AllFalse(d, in_c)) {
        V s = hn::Div(one, hn::Mul(ax, ax));
        auto near = hn::Lt(ax, hn::Set(d, 1 / 0.35));
        V rs = hn::IfThenElse(near, hn::Div(poly(d, s, kRA), poly(d, s, kSA)),
                              hn::Div(poly(d, s, kRB), poly(d, s, kSB)));
        // z: x with its low 32 bits cleared, so that z * z is exact and the rest small.
        const hn::RebindToUnsigned<D> du;
        V z = hn::BitCast(d, hn::And(hn::BitCast(du, ax), hn::Set(du, 0xffffffff00000000ull)));
        V e1 = hn::Exp(d, hn::Sub(hn::Neg(hn::Mul(z, z)), hn::Set(d, 0.5625)));
        V e2 = hn::Exp(d, hn::Add(hn::Mul(hn::Sub(z, ax), hn::Add(z, ax)), rs));
        V q = hn::Div(hn::Mul(e1, e2), ax);
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

// Coefficient k of one of the rational functions of erf_family, or 0 past its end.
template <size_t N>
constexpr double coef(const double (&c)[N], size_t k) {
    return k < N ? c[k] : 0.0;
}

// The rational functions of erf_family's ranges as one table per coefficient, lane r of row k
// holding coefficient k of range r: 0 (PP/QQ), 1 (PA/QA), 2 (RA/SA), 3 (RB/SB); shorter sets padded
// with zeros, rows padded to the widest vector (8 doubles). Ranges 2 and 3 are polynomials in
// s = 1 / u (u = t^2) whose denominator has one coefficient more than the numerator: with both
// reversed, R(1/u) / S(1/u) = u R'(u) / S'(u), which spares the division 1 / u.
struct RangeTable {
    static constexpr size_t kNum = 8, kDen = 9;
    alignas(64) double num[kNum][8];
    alignas(64) double den[kDen][8];
};
// Coefficient j of c's polynomial reversed, or 0 past its end.
template <size_t N>
constexpr double reversed(const double (&c)[N], size_t j) {
    return j < N ? c[N - 1 - j] : 0.0;
}
constexpr RangeTable make_range_table() {
    RangeTable t{};
    for (size_t k = 0; k < RangeTable::kNum; ++k) {
        t.num[k][0] = coef(kPP, k), t.num[k][1] = coef(kPA, k);
        t.num[k][2] = reversed(kRA, k), t.num[k][3] = reversed(kRB, k);
    }
    for (size_t k = 0; k < RangeTable::kDen; ++k) {
        t.den[k][0] = coef(kQQ, k), t.den[k][1] = coef(kQA, k);
        t.den[k][2] = reversed(kSA, k), t.den[k][3] = reversed(kSB, k);
    }
    return t;
}
constexpr RangeTable kRangeTable = make_range_table();

// sum_k rows[k][range] s^k per lane: a table lookup per coefficient where a vector holds the
// four ranges, else selects.
template <class D, class V, class M, size_t K>
HWY_INLINE V ranged_poly(D d, V s, V range, M in_a, M in_b, M in_c2, const double (&rows)[K][8]) {
    if constexpr (hn::MaxLanes(d) >= 4) {
        const hn::RebindToSigned<D> di;
        const auto idx = hn::IndicesFromVec(d, hn::ConvertTo(di, range));
        V r = hn::TableLookupLanes(hn::Load(d, rows[K - 1]), idx);
        for (size_t k = K - 1; k-- > 0;)
            r = hn::MulAdd(r, s, hn::TableLookupLanes(hn::Load(d, rows[k]), idx));
        return r;
    } else {
        const auto pick = [&](size_t k) {
            V c = hn::IfThenElse(in_c2, hn::Set(d, rows[k][3]), hn::Set(d, rows[k][2]));
            c = hn::IfThenElse(in_b, hn::Set(d, rows[k][1]), c);
            return hn::IfThenElse(in_a, hn::Set(d, rows[k][0]), c);
        };
        V r = pick(K - 1);
        for (size_t k = K - 1; k-- > 0;)
            r = hn::MulAdd(r, s, pick(k));
        return r;
    }
}

// naive's normal_cdf, 0.5 erfc(-x sqrt(2) / 2), for |x| <= kGeluReach. The ranges and formulas
// of erf_family, but as one rational function whose coefficients each lane looks up for its range,
// so a vector of mixed ranges (GELU's usual input) costs one division instead of one per range,
// and range c's exp(-t^2 - 0.5625 + R/S) is one exponential of the summed argument rather than
// fdlibm's two of an exact split: the sum's rounding (t^2 < 700, so below 1e-13 relative) is far
// under float's half ULP, which is all the rounded float result sees.
template <class D, class V>
HWY_INLINE V normal_cdf(D d, V x) {
    const V one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
    // Halving is exact, so the product times 0.5 is naive's quotient by 2.
    const V t = hn::Mul(hn::Mul(hn::Neg(x), hn::Set(d, std::numbers::sqrt2)), half);
    const V at = hn::Abs(t);
    const auto neg = hn::Lt(t, hn::Zero(d));
    const auto in_a = hn::Lt(at, hn::Set(d, 0.84375));
    const auto in_b = hn::AndNot(in_a, hn::Lt(at, hn::Set(d, 1.25)));
    const auto in_c = hn::Not(hn::Or(in_a, in_b));
    const auto far = hn::Not(hn::Lt(at, hn::Set(d, 1 / 0.35)));
    const bool any_c = !hn::AllFalse(d, in_c);
    // Ranges a and c take u = t^2 (c with its polynomials reversed, see RangeTable), b |t| - 1.
    const V u = hn::Mul(t, t);
    const V s = hn::IfThenElse(in_b, hn::Sub(at, one), u);
    // Each lane's range, 0 to 3, as an index into the coefficient tables.
    V range = hn::IfThenElse(in_c, hn::IfThenElse(far, hn::Set(d, 3.0), hn::Set(d, 2.0)),
                             hn::IfThenElse(in_b, one, hn::Zero(d)));
    const auto in_c2 = hn::And(in_c, far);
    // A vector wholly in range a (small activations) takes its shorter polynomials alone.
    const V pq = hn::AllTrue(d, in_a)
                         ? hn::Div(poly(d, u, kPP), poly(d, u, kQQ))
                         : hn::Div(ranged_poly(d, s, range, in_a, in_b, in_c2, kRangeTable.num),
                                   ranged_poly(d, s, range, in_a, in_b, in_c2, kRangeTable.den));
    // Range a: 1 - erf(t), erf(t) = t + t pq; above 1/4, 0.5 - (t pq + (t - 0.5)) keeps the low
    // bits that 1 - erf(t) would cancel.
    V r = hn::IfThenElse(hn::Lt(at, hn::Set(d, 0.25)), hn::Sub(one, hn::MulAdd(t, pq, t)),
                         hn::Sub(half, hn::Add(hn::Mul(t, pq), hn::Sub(t, half))));
    // Range b: 1 -+ (erx + pq).
    V b = hn::IfThenElse(neg, hn::Add(one, hn::Add(hn::Set(d, kErx), pq)),
                         hn::Sub(hn::Sub(one, hn::Set(d, kErx)), pq));
    r = hn::IfThenElse(in_b, b, r);
    if (any_c) {
        const V rs = hn::Mul(u, pq);
        // at kept away from zero in the lanes that do not use the quotient.
        const V tc = hn::IfThenElse(in_c, at, one);
        V q = hn::Div(hn::Exp(d, hn::Add(hn::NegMulAdd(tc, tc, hn::Set(d, -0.5625)), rs)), tc);
        r = hn::IfThenElse(in_c, hn::IfThenElse(neg, hn::Sub(hn::Set(d, 2.0), q), q), r);
    }
    return hn::Mul(half, r);
}
// The GELU formulas reach |x| with |x| / sqrt(2) within erfc's reach.
constexpr double kGeluReach = 36;

struct Gelu : Beyond<0> {
    Gelu() : Beyond{kGeluReach} {}
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Mul(x, normal_cdf(d, x));
    }
};
// (x, dy): dy (cdf(x) + x pdf(x)), pdf(x) = exp(-0.5 x x) / sqrt(pi) / sqrt(2) as naive has it.
struct GeluGrad : Beyond<0> {
    GeluGrad() : Beyond{kGeluReach} {}
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        V e = hn::Exp(d, hn::Mul(hn::Mul(hn::Set(d, -0.5), x), x));
        // One product by 1 / sqrt(2 pi) for naive's two quotients: a double rounding apart.
        V pdf = hn::Mul(e, hn::Set(d, std::numbers::inv_sqrtpi / std::numbers::sqrt2));
        return hn::Mul(dy, hn::MulAdd(x, pdf, normal_cdf(d, x)));
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
        V r = hn::Exp(d, hn::Mul(b, hn::Log(d, hn::Abs(a))));
        auto neg = hn::Lt(a, hn::Zero(d));
        auto integral = hn::Eq(hn::Round(b), b);
        auto odd = hn::And(integral, hn::Ne(hn::Round(hn::Mul(b, hn::Set(d, 0.5))),
                                            hn::Mul(b, hn::Set(d, 0.5))));
        r = hn::IfThenElse(hn::And(neg, odd), hn::Neg(r), r);
        return hn::IfThenElse(hn::AndNot(integral, neg), hn::NaN(d), r);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        auto ok = hn::And(hn::Ne(x[0], hn::Zero(d)), hn::IsFinite(x[0]));
        ok = hn::And(ok, hn::IsFinite(x[1]));
        V a = hn::IfThenElse(ok, hn::Abs(x[0]), hn::Set(d, 1.0));
        ok = hn::And(ok, hn::Le(hn::Abs(hn::Mul(x[1], hn::Log(d, a))), hn::Set(d, 700.0)));
        return hn::Not(ok);
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
            return run_double<1>(mode, s, dst, n, Erf()), true;
        case Mode::ERFC:
            return run_double<1>(mode, s, dst, n, Erfc()), true;
        case Mode::ERFINV:
            return run_double<1>(mode, s, dst, n, ErfInv()), true;
        case Mode::ERFCINV:
            return run_double<1>(mode, s, dst, n, ErfcInv()), true;
        case Mode::GELU:
            return run_double<1>(mode, s, dst, n, Gelu()), true;
        case Mode::GELU_GRAD:
            return run_double<2>(mode, s, dst, n, GeluGrad()), true;
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
        case M::GELU:
        case M::GELU_GRAD:
            return 1;
        default:
            return 0;
    }
}

}  // namespace neomeg::dnn::x86
#endif
