// The Elemwise modes of elemwise_math_hwy.cpp (POW, ATAN2, TAN, SIN, COS, the erf family, EXP, GELU
// and its gradient, SIGMOID, SILU, TANH, LOG, LOG1P, EXPM1, ATANH, SOFTPLUS and LOGSIGMOID in
// float, MOD, TRUE_DIV of int32) against naive: the distance in float32 ULPs, which must stay
// within elemwise_f32_max_ulp, over sweeps of each mode's domain and its special values; the float
// and double formulas' redo of out-of-range lanes wherever they fall, in place too; MOD exactly,
// on signed zeros, exact multiples, negative divisors and quotients past 2^24; TRUE_DIV of int32
// into float32 exactly (zero divisors, int32's ends, broadcasts, padded views); and no
// naive-fallback warning for these float32 modes. (elemwise.cpp covers their shapes and layouts.)
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/param_base.h"
#include "src/common/elemwise_special.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_math_hwy.h"
#include "src/x86/exec_report.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

param::Elemwise mode_param(Mode m) {
    param::Elemwise p;
    p.mode = m;
    return p;
}

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

// Floats ordered as integers, so that neighbours differ by one.
int64_t ordered(float f) {
    auto b = static_cast<int64_t>(std::bit_cast<int32_t>(f));
    return b < 0 ? int64_t(INT32_MIN) - b : b;
}

// ULPs between a and b; NaN against NaN is 0, NaN against a number "infinitely" far.
int64_t ulps(double a, double b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
    return std::abs(ordered(static_cast<float>(a)) - ordered(static_cast<float>(b)));
}

// The x86 handle's and naive's results on the same float32 inputs, and their largest distance.
int64_t max_ulps(Handle& x86, Mode m, const std::vector<std::vector<double>>& inputs) {
    std::vector<HostTensor> in;
    for (const auto& v : inputs)
        in.push_back(HostTensor::from({v.size()}, v));
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(m);
    auto ref = Handle::make_naive()->create_operator<Elemwise>();
    ref->param() = mode_param(m);
    auto got = run_op(*op, in)[0].values(), want = run_op(*ref, in)[0].values();
    EXPECT_TRUE(last_kernel(*op).starts_with("hwy:")) << param::to_string(m);
    int64_t worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        int64_t u = ulps(got[i], want[i]);
        EXPECT_LE(u, x86::elemwise_f32_max_ulp(m))
                << param::to_string(m) << " at " << inputs[0][i]
                << (inputs.size() > 1 ? " , " + std::to_string(inputs[1][i]) : "") << ": " << got[i]
                << " vs " << want[i];
        if (u > worst)
            worst = u;
        if (u > x86::elemwise_f32_max_ulp(m))
            break;
    }
    return worst;
}

// n values evenly over [lo, hi], then special values.
std::vector<double> sweep(double lo, double hi, size_t n) {
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i)
        v.push_back(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1));
    const double inf = std::numeric_limits<double>::infinity();
    for (double s : {std::numeric_limits<double>::quiet_NaN(), inf, -inf, 0.0, -0.0, 1e-40, -1e-40,
                     1e-30, -1e-30, 1.0, -1.0, 0.5, -0.5, 2.0, 1e30, -1e30})
        v.push_back(s);
    return v;
}

// c and the count floats on each side of it, appended to x.
void around(std::vector<double>& x, float c, int count) {
    float lo = c, hi = c;
    x.push_back(c);
    for (int i = 0; i < count; ++i) {
        lo = std::nextafter(lo, -INFINITY);
        hi = std::nextafter(hi, INFINITY);
        x.push_back(lo);
        x.push_back(hi);
    }
}

// The x86 handle's results on x equal naive's bit for bit (signed zeros included; any NaN for
// NaN), x repeated 8 times so that each value falls in vector lanes at several positions, not
// only in the scalar tail.
void expect_same_bits(Handle& x86, Mode m, const std::vector<double>& x) {
    std::vector<double> v;
    for (int r = 0; r < 8; ++r)
        v.insert(v.end(), x.begin(), x.end());
    std::vector<HostTensor> in{HostTensor::from({v.size()}, v)};
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(m);
    auto ref = Handle::make_naive()->create_operator<Elemwise>();
    ref->param() = mode_param(m);
    auto got = run_op(*op, in)[0].values(), want = run_op(*ref, in)[0].values();
    for (size_t i = 0; i < v.size(); ++i) {
        const auto g = static_cast<float>(got[i]), w = static_cast<float>(want[i]);
        const bool same = std::isnan(w) ? std::isnan(g)
                                        : std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(w);
        EXPECT_TRUE(same) << param::to_string(m) << " at " << v[i] << ": " << g << " vs " << w;
    }
}

std::vector<double> random_values(size_t n, double lo, double hi, std::mt19937& rng) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(n);
    for (auto& x : v)
        x = u(rng);
    return v;
}

}  // namespace

TEST_F(X86, ElemwiseMathUnaryWithinDocumentedUlps) {
    constexpr size_t kN = 1 << 16;
    struct Case {
        Mode mode;
        double lo, hi;
    };
    for (Case c : {Case{Mode::EXP, -88, 89},       Case{Mode::EXP, -1, 1},
                   Case{Mode::EXP, -104, -86},     Case{Mode::TAN, -8, 8},
                   Case{Mode::TAN, -40000, 40000}, Case{Mode::SIN, -8, 8},
                   Case{Mode::SIN, -1e-6, 1e-6},   Case{Mode::SIN, -40000, 40000},
                   Case{Mode::COS, -8, 8},         Case{Mode::COS, -2e6, 2e6},
                   Case{Mode::ERF, -7, 7},         Case{Mode::ERF, -1e-3, 1e-3},
                   Case{Mode::ERFC, -7, 30},       Case{Mode::ERFINV, -1, 1},
                   Case{Mode::ERFCINV, 0, 2},      Case{Mode::ERFCINV, 0, 1e-6},
                   Case{Mode::GELU, -40, 40},      Case{Mode::GELU, -3, 3},
                   Case{Mode::TANH, -12, 12},      Case{Mode::TANH, -1, 1}}) {
        (void)max_ulps(*handle, c.mode, {sweep(c.lo, c.hi, kN)});
    }
    // ERFINV's tail next to +-1, where 1 - |y| is a few float ULPs.
    std::vector<double> near_one;
    for (float f = 1.0f; near_one.size() < 200;) {
        f = std::nextafter(f, 0.0f);
        near_one.push_back(f);
        near_one.push_back(-f);
    }
    (void)max_ulps(*handle, Mode::ERFINV, {near_one});
    // Where ERFINV's and ERFCINV's two polynomials meet (w = -log(1 - y^2) = 5), ERFCINV's least
    // vector argument and 1 (where erfinv(1 - y) takes over from the tail), and subnormal y.
    const float split = static_cast<float>(std::sqrt(-std::expm1(-5.0)));
    std::vector<double> inv, cinv;
    for (float c : {split, -split, 0.5f, -0.5f, 1e-38f, -1e-38f, 1e-44f})
        around(inv, c, 64);
    for (float c : {1 - split, 1 + split, 5e-8f, 2 - 5e-8f, 1.0f, 0.5f, 1.5f})
        around(cinv, c, 64);
    (void)max_ulps(*handle, Mode::ERFINV, {inv});
    (void)max_ulps(*handle, Mode::ERFCINV, {cinv});
}

// EXP's vector formula rounds n = x / ln 2 to the nearest integer and scales by 2^n, so its
// reduced argument is largest next to the halfway points (k + 1/2) ln 2, where n's rounding
// turns, and 2^n is extreme at the ends of the range it computes ([-87, 88]): the floats next to
// each, on both sides, against naive.
TEST_F(X86, ElemwiseExpAtItsRoundingTurnsAndRangeEnds) {
    std::vector<double> x;
    for (int k = -126; k <= 127; ++k)
        around(x, static_cast<float>((k + 0.5) * std::numbers::ln2), 16);
    for (float end : {-87.0f, 88.0f, 88.72283f, -87.33654f, 0.0f})
        around(x, end, 64);
    (void)max_ulps(*handle, Mode::EXP, {x});
}

// GELU and its gradient run in float (elemwise_math_hwy.cpp): Phi(-|x|) as exp(-x^2 / 2) times a
// rational function of |x|, clamped at 13 above zero, with naive's formula below -13. The floats
// next to each place where the formula turns or is least accurate: zero, +-13 (the clamp, the
// scalar formula's border), the points where exp's reduction rounds n = x^2 / (2 ln 2) the other
// way (its reduced argument is largest there), and the gradient's root at x = -0.7517915 (its
// relative accuracy there rests on the factor a0 - a); tiny and subnormal inputs, the negative tail
// where GELU nears float's smallest normal, and a dense sweep past both ends; at each Highway
// target.
TEST_F(X86, ElemwiseGeluAtItsBordersAndTails) {
    std::vector<double> x;
    for (float c :
         {0.0f, 13.0f, -13.0f, -0.75179152f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, -12.5f, -6.0f, 6.0f})
        around(x, c, 64);
    for (int k = 0; k <= 122; ++k) {
        auto turn = static_cast<float>(std::sqrt(2 * std::numbers::ln2 * (k + 0.5)));
        around(x, turn, 4);
        around(x, -turn, 4);
    }
    for (double v : sweep(-14, 14, 1 << 15))
        x.push_back(v);
    std::vector<double> dy(x.size());
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-2, 2);
    for (auto& v : dy)
        v = u(rng);
    (void)max_ulps(*handle, Mode::GELU, {x});
    (void)max_ulps(*handle, Mode::GELU_GRAD, {x, dy});
    (void)max_ulps(*handle, Mode::GELU_GRAD, {x, std::vector<double>(x.size(), 1.0)});
#ifdef NEOMEG_WITH_DNNL
    // Each instruction set this CPU has (AVX-512, AVX2, Highway's emulation and scalar targets),
    // restored afterwards.
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
        (void)max_ulps(*handle, Mode::GELU, {x});
        (void)max_ulps(*handle, Mode::GELU_GRAD, {x, dy});
    });
#endif
}

// SIGMOID and SILU in float (exp of -|x|, one quotient): within elemwise_f32_max_ulp of naive's
// double formula around zero (where the two quotients meet), at 17 (where sigmoid reaches 1 in
// float), at the vector range's ends +-87 (past them, naive's formula), next to the subnormal
// results below -87, over a dense sweep, and at each Highway target.
TEST_F(X86, ElemwiseSigmoidAndSiluAtTheirBordersAtEachTarget) {
    std::vector<double> x;
    for (float c : {0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 17.0f, -17.0f, 87.0f, -87.0f, 88.0f,
                    -88.0f, -103.0f, -1.0988f})
        around(x, c, 64);
    for (double v : sweep(-90, 90, 1 << 16))
        x.push_back(v);
    // saturated inputs, whole vectors of them (in float or double lanes, not naive's formula)
    for (double v : sweep(-200, 200, 1 << 12))
        x.push_back(v);
    for (double v : {double(INFINITY), double(-INFINITY), double(NAN), 1e30, -1e30})
        x.push_back(v);
    const auto both = [&] {
        (void)max_ulps(*handle, Mode::SIGMOID, {x});
        (void)max_ulps(*handle, Mode::SILU, {x});
    };
    both();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { both(); });
#endif
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::SIGMOID), 2);
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::SILU), 3);
}

// TANH in float (TanhF: a + a^3 P(a^2) below |x| = 0.75, 1 - 2e / (1 + e) with e = exp(-2|x|) and
// the quotient's roundings carried from there), within one ULP of naive's double formula: every
// 4093rd float32 bit pattern, a dense sweep past the saturation, and the floats next to the split
// at 0.75, to 0.5493 (tanh = 1/2, where the result's ULP halves), to where tanh(x) rounds to x
// (4.2e-4) and to 1 (9.011), to the clamp at 10, and to exp's turns at 2|x| = (k + 1/2) ln 2, both
// signs, at each Highway target, where each result is also one of the two floats around the exact
// tanh; zeros, infinities, subnormals and the saturated values bit for bit naive's.
// Each of the x86 handle's TANH results on the finite x is one of the two floats around tanh(x)
// (in long double, far more accurate than float): less than one ULP from the exact value, which is
// what keeps TanhF within one ULP of naive's double formula, whatever naive's own rounding.
void expect_tanh_faithful(Handle& x86, const std::vector<double>& x) {
    std::vector<HostTensor> in{HostTensor::from({x.size()}, x)};
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(Mode::TANH);
    const auto got = run_op(*op, in)[0].values();
    for (size_t i = 0; i < x.size(); ++i) {
        const long double exact = std::tanh(static_cast<long double>(static_cast<float>(x[i])));
        const auto near = static_cast<float>(exact);
        const float other = std::nextafter(near, exact < near ? -INFINITY : INFINITY);
        const auto g = static_cast<float>(got[i]);
        EXPECT_TRUE(g == near || g == other) << "TANH at " << x[i] << ": " << g << " vs " << near;
    }
}

TEST_F(X86, ElemwiseTanhInFloatAtEachTarget) {
    std::vector<double> x;
    for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4093)
        x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    const auto saturation = static_cast<float>(std::atanh(1 - std::ldexp(1.0, -25)));
    const auto half = static_cast<float>(std::atanh(0.5));
    for (float c : {0.75f, half, 4.2e-4f, saturation, 10.0f, 1.0f, 2.0f, 1e-30f, 1.17549435e-38f})
        for (float sgn : {1.0f, -1.0f})
            around(x, sgn * c, 64);
    for (int k = 0; k < 30; ++k)
        for (float sgn : {1.0f, -1.0f})
            around(x, sgn * static_cast<float>((k + 0.5) * std::numbers::ln2 / 2), 8);
    for (double v : sweep(-12, 12, 1 << 16))
        x.push_back(v);
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> exact = {0.0,   -0.0,   inf,   -inf,   std::nan(""), 1e-45, -1e-45,
                                       1e-40, -1e-40, 1e-20, -1e-20, 9.5,          -9.5,  10.0,
                                       -10.0, 20.0,   -1e30, 3.4e38, -3.4e38};
    std::vector<double> finite;
    for (double v : x)
        if (std::isfinite(v))
            finite.push_back(v);
    const auto all = [&] {
        (void)max_ulps(*handle, Mode::TANH, {x});
        expect_tanh_faithful(*handle, finite);
        expect_same_bits(*handle, Mode::TANH, exact);
    };
    all();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { all(); });
#endif
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::TANH), 1);
}

// ERFINV on the x86 handle is faithful: each result is one of the two floats around the exact
// value (naive's double erfinv, within a few double ULPs of it), against 1 float ULP of naive's
// rounded result that max_ulps asks.
void expect_erfinv_faithful(Handle& x86, const std::vector<double>& y) {
    std::vector<HostTensor> in{HostTensor::from({y.size()}, y)};
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(Mode::ERFINV);
    const auto got = run_op(*op, in)[0].values();
    for (size_t i = 0; i < y.size(); ++i) {
        const double exact = elemwise::erfinv(static_cast<float>(y[i]));
        const auto near = static_cast<float>(exact);
        const float other = std::nextafter(near, exact < near ? -INFINITY : INFINITY);
        const auto g = static_cast<float>(got[i]);
        EXPECT_TRUE(g == near || g == other) << "ERFINV at " << y[i] << ": " << g << " vs " << near;
    }
}

// ERFINV runs in float lanes on the targets with FMA (ErfInvF in elemwise_math_hwy.cpp: w =
// -log(1 - y^2) as a float pair, y (c0 + w R(w)) rounded once, and a vector holding a lane of w >=
// 5 computed in double lanes), in double elsewhere; faithful at each Highway target on: every
// 4093rd float32 bit pattern; every 3rd float of its worst stretch, |y| in [0.990, 0.9966] (w
// from 3.9 to 5, where R's rounding times w and P's slope are largest against the result; 0.9991
// ULP of the exact value at most over every float32 input); the floats next to w = 5 and to y =
// 0.00427 (where w - 2.5 rounded w's low bits away); tiny and subnormal y, where y c0lo underflows;
// and a lane of w >= 5 at each position of 16 among near ones, which sends its vector to the double
// formula; the floats next to +-1 (w up to 16.6). +-0, +-1, NaN and |y| > 1 bit for bit as naive's.
TEST_F(X86, ElemwiseErfinvInFloatIsFaithfulAtEachTarget) {
    std::vector<double> y;
    for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4093) {
        const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
        if (std::abs(f) < 1)
            y.push_back(f);
    }
    for (uint32_t b = std::bit_cast<uint32_t>(0.990f); b < std::bit_cast<uint32_t>(0.9966f); b += 3)
        for (float sgn : {1.0f, -1.0f})
            y.push_back(sgn * std::bit_cast<float>(b));
    const auto split = static_cast<float>(std::sqrt(-std::expm1(-5.0)));
    for (float c : {split, 0.00427036f, 1e-30f, 2.1e-38f, 1e-40f, 1e-45f})
        for (float sgn : {1.0f, -1.0f})
            around(y, sgn * c, 64);
    for (int lane = 0; lane < 16; ++lane)
        for (int j = 0; j < 32; ++j)
            y.push_back(j == lane ? -0.9999 : 0.3 + 0.01 * j);
    for (float c : {1.0f, -1.0f})
        around(y, c, 64);  // the floats past +-1 are erased: NaN, in the bits check below
    std::erase_if(y, [](double v) { return !(std::abs(v) < 1); });
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> exact = {0.0,  -0.0, 1.0,  -1.0, 1.00000012,
                                       -1.5, inf,  -inf, 3e38, std::nan("")};
    const auto all = [&] {
        expect_erfinv_faithful(*handle, y);
        expect_same_bits(*handle, Mode::ERFINV, exact);
    };
    all();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { all(); });
#endif
}

// LOG, LOG1P, EXPM1, ATANH, SOFTPLUS and LOGSIGMOID in float (log_f32_hwy-inl.h), each within
// elemwise_f32_max_ulp of naive's double formula: every 4093rd float32 bit pattern (a million,
// all binades of both signs, subnormals, infinities and NaNs), and the floats next to each
// formula's seams at each Highway target: the logarithm's reduction turns at m = sqrt(1/2) (the
// floats 2^k sqrt(1/2), and for LOG1P and ATANH the x where 1 + x or 1 - |x| crosses sqrt(2) or
// sqrt(1/2)), LOG1P's two-sum (x next to 1, 2^24, 2^25, -1/2 and -1), EXPM1's and exp_f32's
// rounding of n at (k + 1/2) ln 2 (for SOFTPLUS and LOGSIGMOID at -|x|), EXPM1 where 2^n - 1 stops
// being exact (n = 25), where it is -1 in float (-17.33) and its range's ends (-87, 88), ATANH next
// to +-1/2 and +-1, SOFTPLUS and LOGSIGMOID where 1 + exp(-|x|) = sqrt(2) (|x| = 0.8814), where
// log1p(e) = e in float and at the ends +-87; zero, the smallest normals and subnormals.
TEST_F(X86, ElemwiseLogFamilyInFloatAtEachTarget) {
    std::vector<double> sample;
    for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4093)
        sample.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    const float rt = std::sqrt(0.5f), ln2 = static_cast<float>(std::numbers::ln2);
    std::vector<double> common = sample;
    for (float c : {0.0f, 1e-30f, 1e-40f, 1.17549435e-38f, 1.0f, 0.5f, 2.0f})
        for (float sgn : {1.0f, -1.0f})
            around(common, sgn * c, 16);
    std::vector<double> in_log = common, in_log1p = common, in_expm1 = common, in_atanh = common,
                        soft = common;
    for (int k = -126; k <= 127; ++k) {
        around(in_log, std::ldexp(rt, k), 4);
        around(in_log, std::ldexp(1.0f, k), 4);
        around(in_log1p, std::ldexp(rt, k) - 1, 4);
        around(in_log1p, std::ldexp(1.0f, k) - 1, 4);
        around(in_log1p, std::ldexp(1.0f, k), 2);
        around(in_expm1, static_cast<float>((k + 0.5) * std::numbers::ln2), 8);
        for (float sgn : {1.0f, -1.0f})
            around(soft, sgn * static_cast<float>((k + 0.5) * std::numbers::ln2), 4);
    }
    for (float c : {3.40282347e38f, 1e38f})
        around(in_log, c, 16);
    for (float c : {-1.0f, -0.5f, 1.0f, 16777216.0f, 33554432.0f, rt - 1, 1 / rt - 1, 3.4e38f})
        around(in_log1p, c, 32);
    for (float c : {ln2 / 2, -ln2 / 2, 24.5f * ln2, 25.0f * ln2, -24.5f * ln2, -17.3286802f, -87.0f,
                    88.0f, -88.0f})
        around(in_expm1, c, 32);
    for (float c : {0.5f, 1.0f, 1 / rt - 1, 1 - rt, 0.9f})
        for (float sgn : {1.0f, -1.0f})
            around(in_atanh, sgn * c, 64);
    for (float c : {0.881373584f, 16.6355324f, 17.0f, 87.0f, 88.0f, 104.0f})
        for (float sgn : {1.0f, -1.0f})
            around(soft, sgn * c, 32);
    for (double v : sweep(-90, 90, 1 << 14))
        soft.push_back(v), in_expm1.push_back(v);
    const auto all = [&] {
        (void)max_ulps(*handle, Mode::LOG, {in_log});
        (void)max_ulps(*handle, Mode::LOG1P, {in_log1p});
        (void)max_ulps(*handle, Mode::EXPM1, {in_expm1});
        (void)max_ulps(*handle, Mode::ATANH, {in_atanh});
        (void)max_ulps(*handle, Mode::SOFTPLUS, {soft});
        (void)max_ulps(*handle, Mode::LOGSIGMOID, {soft});
    };
    all();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { all(); });
#endif
    // Special values and the ends of each formula's range, where the results are naive's bits:
    // signed zeros, infinities, NaN, subnormals, float's extremes, the saturations (EXPM1's -1,
    // SOFTPLUS's x and LOGSIGMOID's x), the poles and the overflow to inf, and past the vector
    // range the subnormal and zero results of naive's formula.
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    const double fmin = std::numeric_limits<float>::min(), fmax = std::numeric_limits<float>::max();
    const std::vector<double> common_special = {0.0,   -0.0,   inf,   -inf,  nan,
                                                1e-45, -1e-45, 1e-40, -1e-40};
    const std::vector<std::pair<Mode, std::vector<double>>> exact = {
            {Mode::LOG, {-fmin, 1.0, -1.0, -fmax}},
            {Mode::LOG1P, {fmin, -fmin, -1.0, -1.5, -fmax}},
            {Mode::EXPM1,
             {fmin, -fmin, 88.72283, 88.72284, 89.0, -17.5, -87.0, -87.5, -104.0, -1e30, fmax,
              -fmax}},
            {Mode::ATANH, {fmin, -fmin, 1.0, -1.0, 1.5, -1.5}},
            {Mode::SOFTPLUS, {-87.5, -100.0, -104.0, -110.0, -1e30, 17.5, 87.0, 87.5, 1e30, fmax}},
            {Mode::LOGSIGMOID,
             {87.5, 100.0, 104.0, 110.0, 1e30, -17.5, -87.0, -87.5, -1e30, -fmax}},
    };
    const auto specials = [&] {
        for (const auto& [m, values] : exact) {
            std::vector<double> v = common_special;
            v.insert(v.end(), values.begin(), values.end());
            expect_same_bits(*handle, m, v);
        }
    };
    specials();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR},
                            [&](int64_t) { specials(); });
#endif
    for (Mode m : {Mode::LOG, Mode::LOG1P, Mode::EXPM1, Mode::ATANH})
        EXPECT_EQ(x86::elemwise_f32_max_ulp(m), 1) << param::to_string(m);
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::SOFTPLUS), 2);
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::LOGSIGMOID), 2);
}

// The x86 handle's results computed in place (dst is operand 0's memory, as a graph runs an
// Elemwise whose input dies there) equal its results into a separate dst, bit for bit: a vector
// redone by naive's formula must read the operands before anything is stored over them.
void expect_same_in_place(Handle& x86, Mode m, const std::vector<std::vector<double>>& inputs) {
    std::vector<HostTensor> in;
    for (const auto& v : inputs)
        in.push_back(HostTensor::from({v.size()}, v));
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(m);
    const auto want = run_op(*op, in)[0].values();
    std::vector<TensorND> nds;
    std::vector<TensorLayout> layouts;
    for (const auto& t : in) {
        nds.push_back(t.nd());
        layouts.push_back(t.layout());
    }
    const std::vector<TensorND> dst{nds[0]};
    const std::vector<TensorLayout> dst_layout{layouts[0]};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(layouts, dst_layout));
    op->exec(nds, dst, {ws.data(), ws.size()});
    const auto got = in[0].values();
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(got[i])),
                  std::bit_cast<uint32_t>(static_cast<float>(want[i])))
                << param::to_string(m) << " in place at " << i << " of " << got.size() << ": "
                << inputs[0][i] << " gives " << got[i] << ", not " << want[i];
}

// The float formulas (EXP, GELU, GELU_GRAD, LOG, LOG1P, EXPM1, ATANH, SOFTPLUS, LOGSIGMOID, ERF,
// ERFC, TANH, SIGMOID, SILU) run four vectors a step, then one vector, then element by element; a
// vector holding a lane outside the formula's range (EXP below -87, GELU below -13, SOFTPLUS below
// -87, LOGSIGMOID above 87: subnormal or zero results; subnormal LOG, EXPM1 above 88, LOG1P at or
// below -1, ATANH at or past 1, the NaN of ERF, TANH, SIGMOID and SILU, ERFC above 9) is redone by
// naive's formula, and only that vector (SIGMOID and SILU below -87 compute their vector in double
// lanes instead). Such lanes first, last and inside a step, in the one-vector loop and in the
// scalar tail, among ordinary lanes of the mode's domain, for lengths around the step's; and the
// same in place (a traced F.nn.binary_cross_entropy ran SOFTPLUS in place on NEGATE's output and
// got log 2 in the lanes beside a logit above 87: softplus of its own results).
TEST_F(X86, ElemwiseFloatFormulasRedoMarkedLanesAnywhere) {
    struct Case {
        Mode mode;
        double lo, hi;   // ordinary lanes
        double far, by;  // marked lane i: far + by (i % 7)
    };
    std::mt19937 rng(8);
    for (Case c : {Case{Mode::EXP, -3, 3, -100, -1}, Case{Mode::GELU, -3, 3, -20, -1},
                   Case{Mode::GELU_GRAD, -3, 3, -20, -1}, Case{Mode::LOG, 0.01, 3, 1e-40, 1e-40},
                   Case{Mode::LOG1P, -0.9, 3, -1, -1}, Case{Mode::EXPM1, -3, 3, 88.5, 0.03},
                   Case{Mode::ATANH, -0.9, 0.9, 1, 1}, Case{Mode::SOFTPLUS, -3, 3, -88, -1},
                   Case{Mode::LOGSIGMOID, -3, 3, 88, 1}, Case{Mode::ERF, -3, 3, NAN, 0},
                   Case{Mode::ERFC, -3, 3, 9.5, 0.1}, Case{Mode::TANH, -3, 3, NAN, 0},
                   Case{Mode::SIGMOID, -3, 3, -88, -3}, Case{Mode::SILU, -3, 3, -88, -3},
                   Case{Mode::SIGMOID, -3, 3, NAN, 0}, Case{Mode::SILU, -3, 3, NAN, 0}}) {
        const Mode m = c.mode;
        for (size_t n : {size_t(63), size_t(64), size_t(65), size_t(213), size_t(1000)}) {
            auto x = random_values(n, c.lo, c.hi, rng);
            for (size_t i :
                 {size_t(0), size_t(17), size_t(63), size_t(96), size_t(195), size_t(210), n - 1})
                if (i < n)
                    x[i] = c.far + c.by * static_cast<double>(i % 7);
            std::vector<std::vector<double>> in{x};
            if (arity(m) == 2)
                in.push_back(random_values(n, -2, 2, rng));
            (void)max_ulps(*handle, m, in);
            expect_same_in_place(*handle, m, in);
        }
    }
}

// An element's result depends on its operands only, not on where it sits in its run: in a vector,
// in the partial vector at the end (up to 15 elements on AVX-512), or beside a lane the formula
// redoes. Every suffix and prefix of a run, at each Highway target, gives the whole run's bits at
// the same elements (a fused graph cuts a tensor into blocks: it must give the unfused results).
void expect_place_independent(Handle& x86, Mode m, const std::vector<std::vector<double>>& in) {
    auto op = x86.create_operator<Elemwise>();
    op->param() = mode_param(m);
    const auto run = [&](size_t from, size_t to) {
        std::vector<HostTensor> t;
        for (const auto& v : in)
            t.push_back(HostTensor::from(
                    {to - from}, std::vector<double>(v.begin() + static_cast<ptrdiff_t>(from),
                                                     v.begin() + static_cast<ptrdiff_t>(to))));
        return run_op(*op, t)[0].values();
    };
    const size_t n = in[0].size();
    const auto whole = run(0, n);
    const auto same = [](double a, double b) {
        return std::isnan(a) ? std::isnan(b)
                             : std::bit_cast<uint32_t>(static_cast<float>(a)) ==
                                       std::bit_cast<uint32_t>(static_cast<float>(b));
    };
    for (size_t cut = 1; cut < n; ++cut) {
        const auto head = run(0, cut), tail = run(cut, n);
        for (size_t i = 0; i < n; ++i) {
            const double part = i < cut ? head[i] : tail[i - cut];
            ASSERT_TRUE(same(part, whole[i]))
                    << param::to_string(m) << " at " << in[0][i] << " (element " << i << " of " << n
                    << ", cut at " << cut << "): " << part << " vs " << whole[i];
        }
    }
}

TEST_F(X86, ElemwiseResultsDoNotDependOnTheirPlaceInTheRun) {
    std::mt19937 rng(21);
    const size_t n = 40;  // two AVX-512 vectors and a tail; five AVX2 vectors
    auto x = random_values(n, -4, 4, rng);
    auto positive = random_values(n, 0.01, 4, rng);
    auto unit = random_values(n, -0.99, 0.99, rng);
    // lanes some formulas redo (saturated SIGMOID, exp's underflow, ERFC's far tail, NaN)
    x[5] = -95;
    x[22] = NAN;
    x[37] = 12;
    const std::vector<std::pair<Mode, std::vector<std::vector<double>>>> cases = {
            {Mode::EXP, {x}},
            {Mode::TANH, {x}},
            {Mode::SIGMOID, {x}},
            {Mode::SILU, {x}},
            {Mode::GELU, {x}},
            {Mode::ERF, {x}},
            {Mode::ERFC, {x}},
            {Mode::SOFTPLUS, {x}},
            {Mode::LOGSIGMOID, {x}},
            {Mode::EXPM1, {x}},
            {Mode::SIN, {x}},
            {Mode::TAN, {x}},
            {Mode::ATAN, {x}},
            {Mode::SINH, {x}},
            {Mode::LOG, {positive}},
            {Mode::LOG1P, {positive}},
            {Mode::ERFINV, {unit}},
            {Mode::ERFCINV, {positive}},
            {Mode::ATANH, {unit}},
            {Mode::ASIN, {unit}},
            {Mode::POW, {positive, x}},
            {Mode::ATAN2, {x, positive}},
            {Mode::GELU_GRAD, {x, positive}},
            {Mode::FUSE_MUL_ADD3, {x, positive, unit}}};
    const auto all = [&] {
        for (const auto& [m, in] : cases)
            expect_place_independent(*handle, m, in);
    };
    all();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { all(); });
#endif
}

// The double formulas' per-vector shortcuts: POW marks the lanes naive's formula redoes from the
// logarithm its value computes (with_special), which must mark what its own check marks: zero,
// non-finite and exp-overflowing operands. TAN, SIN and COS mark only lanes past 2^20, NaN and
// infinities (TAN's poles are the vector formula's: -cos / sin). ERF and ERFC in double lanes
// compute a range only where a vector holds a lane of it, and ERFC's far tail (x > 4) only where
// one needs it; in float lanes they compute each of their ranges and pick per lane, ERF marking
// NaN and ERFC NaN and x > 9: a single
// lane of each range, at the borders and past the clamp, at every position of a vector, among
// lanes of another range, for lengths around AVX-512's and AVX2's vectors and a tail.
TEST_F(X86, ElemwiseRangeFormulasShortcutsPerLane) {
    std::mt19937 rng(21);
    const double pole = std::numbers::pi / 2;
    const std::vector<double> tan_odd = {pole, -pole,    3 * pole,  pole + 5e-4, 39001,   -5e4,
                                         NAN,  INFINITY, -INFINITY, 1e-40,       1048577, 2.5};
    for (size_t n : {size_t(7), size_t(8), size_t(9), size_t(17), size_t(63), size_t(100)})
        for (size_t at = 0; at < n; at += 3) {
            auto x = random_values(n, -1.2, 1.2, rng);
            x[at] = tan_odd[at % tan_odd.size()];
            for (Mode m : {Mode::TAN, Mode::SIN, Mode::COS})
                (void)max_ulps(*handle, m, {x});
            auto a = random_values(n, 0.5, 4, rng), b = random_values(n, -5, 5, rng);
            const double odd_a[] = {0.0, -0.0, INFINITY, NAN, 1e30, -3, 2};
            const double odd_b[] = {2, -1, 1, 1, 40, 3, 1e4};
            a[at] = odd_a[at % 7];
            b[at] = odd_b[at % 7];
            (void)max_ulps(*handle, Mode::POW, {a, b});
            // run_double redoes these vectors too: in place, from the operands
            expect_same_in_place(*handle, Mode::TAN, {x});
            expect_same_in_place(*handle, Mode::POW, {a, b});
            for (double lane :
                 {0.3, 1.0, 2.0, 3.5, 4.5, 27.0, -6.0, double(NAN), 0.921875, -0.92187494, 3.95,
                  double(-INFINITY), 0.46875, -1.9999999, 9.0, 9.0000009, -9.5}) {
                for (double rest : {0.5, 1.1, 1.9}) {
                    std::vector<double> e(n);
                    for (size_t i = 0; i < n; ++i)
                        e[i] = (i % 2 ? -1 : 1) * (rest + 1e-3 * static_cast<double>(i));
                    e[at] = lane;
                    (void)max_ulps(*handle, Mode::ERF, {e});
                    (void)max_ulps(*handle, Mode::ERFC, {e});
                }
            }
        }
}

// ERF and ERFC over runs with stretches of mixed ranges, whole vectors past |x| = 1 and whole
// vectors below it (erf_fast computes a range only where a vector holds a lane of it, ERFC's far
// tail only where a lane is past 4), and marked lanes (NaN, infinities, past 26) redone by naive's
// formula, at each Highway target the CPU has among AVX-512, AVX2 and the emulation (8, 4 and 2
// double lanes).
TEST_F(X86, ElemwiseErfRangeStretchesMatchNaive) {
#ifdef NEOMEG_WITH_DNNL
    std::mt19937 rng(22);
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (size_t n : {size_t(256), size_t(257), size_t(700)}) {
            std::normal_distribution<double> g(0, 1.5);
            std::vector<double> x(n);
            for (double& v : x)
                v = g(rng);
            for (size_t i = 40; i < 72 && i < n; ++i)  // whole vectors in the tail
                x[i] = (i % 2 ? -1 : 1) * (1.3 + 0.2 * static_cast<double>(i % 13));
            for (size_t i = 100; i < 132 && i < n; ++i)  // whole vectors inside
                x[i] = 0.01 * static_cast<double>(i) - 1.1;
            const double odd[] = {NAN, INFINITY, -INFINITY, 30, -27, 1e-40, 0.0, 26, 2.9, 4.5, 9.5};
            for (size_t k = 0; k < 11; ++k)
                x[(k * 61 + 5) % n] = odd[k];
            (void)max_ulps(*handle, Mode::ERF, {x});
            (void)max_ulps(*handle, Mode::ERFC, {x});
        }
    });
    EXPECT_GE(ran, 1u);
#endif
}

// TAN, SIN, COS, POW and ERFCINV compute in double lanes to float accuracy (polynomials of
// 2^-26.6 .. 2^-31 relative error, elemwise_math_hwy.cpp), and ERF, ERFC and ERFINV in float lanes
// on the targets with FMA (in double on EMU128 and SCALAR), each result within one float ULP of
// naive's. The exhaustive measure is bench/elemwise_ulp.cpp (every float32 input; max 1); here a
// dense deterministic sample at each Highway target: every 4093rd float32 bit pattern (a million,
// all binades of both signs, subnormals, infinities and NaNs included), the floats next to each
// formula's borders (ERF's 0.921875 in float and 1 in double, where it rounds to 1 and its clamp
// at 4, ERFC's 0.46875, 2 and 9 in float, its far tail at 4 and its end at 26 in double, the
// multiples of pi/4 up to the reach 2^20 of TAN, SIN and COS, where their reduction and quadrants
// turn, and the reach itself), and for POW bases spread over every binade with exponents whose
// b ln a spans float's range of results, negative bases with integral and other exponents, and
// C99's special cases of pow (as naive's).
TEST_F(X86, ElemwiseOneUlpModesAtEachTarget) {
    std::vector<double> x;
    for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4093)
        x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    // ERF's float formulas meet at 0.921875, and erf rounds to float's 1 from 3.9205 (erfc =
    // 2^-25) up to the clamp at 4; ERFC's at 0.46875 and 2 (erfcx's two polynomials), its float
    // lanes reach 9.
    for (float c : {1.0f, 4.0f, 26.0f, 0.0f, 2.5f, 0.921875f, 3.9205f, 0.46875f, 2.0f, 9.0f})
        for (float sgn : {1.0f, -1.0f})
            around(x, sgn * c, 32);
    // ERFC's worst stretch in float lanes, where u R(u) is largest against erfcx (1.39 ULPs from
    // the exact value at most): every 4th float of [0.4765, 0.4915].
    for (uint32_t b = std::bit_cast<uint32_t>(0.4765f); b < std::bit_cast<uint32_t>(0.4915f);
         b += 4)
        x.push_back(std::bit_cast<float>(b));
    std::vector<double> t = x;
    for (int k = -300; k <= 300; ++k)
        around(t, static_cast<float>(k * std::numbers::pi / 4), 4);
    for (double big : {1e3, 1e4, 1e5, 1048576.0})
        for (int k = 0; k < 64; ++k)
            around(t,
                   static_cast<float>(std::round(big / (std::numbers::pi / 2) + k) *
                                      (std::numbers::pi / 2)),
                   2);
    around(t, 1048576.0f, 8);
    around(t, -1048576.0f, 8);
    // The floats below 2^20 nearest a multiple of pi/2 (the reduced argument 4e-9 .. 5e-8).
    for (float c : {252.898209f, 505.796417f, 1011.59283f, 2023.18567f, 52516.4336f, 105032.867f,
                    267058.938f, 4.71238899f, 9.42477798f, 14.137167f, 18.849556f})
        around(t, c, 2);
    std::vector<double> a, b;
    std::mt19937 rng(41);
    std::uniform_real_distribution<double> span(-135, 105);
    for (uint32_t bits = 1; bits < 0x7f800000u; bits += 8191) {
        const float base = std::bit_cast<float>(bits);
        const double la = std::log(static_cast<double>(base));
        for (int j = 0; j < 4; ++j) {
            const double e = static_cast<float>(la != 0 ? span(rng) / la : span(rng));
            a.push_back(j == 1 ? -base : base);
            b.push_back(j == 1 ? std::round(e) : j == 2 ? std::round(e * 0.01) : e);
        }
        a.push_back(-base);  // non-integral exponent of a negative base: NaN
        b.push_back(0.5);
    }
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    const std::vector<std::pair<double, double>> c99 = {
            {nan, 0.0},  {nan, -0.0}, {1, nan},     {1, inf},      {-1, inf},   {-1, -inf},
            {0.0, -3},   {-0.0, -3},  {0.0, -2},    {-0.0, -2.5},  {0.0, -inf}, {-0.0, -inf},
            {0.0, 3},    {-0.0, 3},   {-0.0, 2},    {0.0, 0.5},    {0.5, -inf}, {2, -inf},
            {0.5, inf},  {2, inf},    {-inf, -3},   {-inf, -2},    {-inf, 3},   {-inf, 2},
            {inf, -1},   {inf, 1},    {-2, 0.5},    {nan, 1},      {2, nan},    {1e-45, 0.01},
            {1e-45, -1}, {3e38, 2},   {3e38, -0.5}, {2, 128},      {2, -150},   {2, -149},
            {-2, -149},  {-2, 127},   {0.999, 1e5}, {1.0001, 7e5}, {10, -45},   {10, 38.5}};
    for (auto [pa, pb] : c99) {
        a.push_back(pa);
        b.push_back(pb);
    }
    const auto all = [&] {
        (void)max_ulps(*handle, Mode::ERF, {x});
        (void)max_ulps(*handle, Mode::ERFC, {x});
        (void)max_ulps(*handle, Mode::TAN, {t});
        (void)max_ulps(*handle, Mode::SIN, {t});
        (void)max_ulps(*handle, Mode::COS, {t});
        (void)max_ulps(*handle, Mode::POW, {a, b});
        (void)max_ulps(*handle, Mode::ERFINV, {x});
        (void)max_ulps(*handle, Mode::ERFCINV, {x});
    };
    all();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { all(); });
#endif
    for (Mode m : {Mode::ERF, Mode::ERFC, Mode::TAN, Mode::SIN, Mode::COS, Mode::POW, Mode::ERFINV,
                   Mode::ERFCINV})
        EXPECT_EQ(x86::elemwise_f32_max_ulp(m), 1) << param::to_string(m);
}

TEST_F(X86, ElemwiseMathBinaryWithinDocumentedUlps) {
    std::mt19937 rng(12);
    constexpr size_t kN = 1 << 16;
    (void)max_ulps(*handle, Mode::POW,
                   {random_values(kN, 0, 10, rng), random_values(kN, -30, 30, rng)});
    // Negative bases (integer and not), zero, and exponents at exp's ends.
    std::vector<double> a = {-2, -2, -0.5, 0, 0, -0.0, 1, 1, 2, 2, 1e-30, 10, 0.999, -8, 4, 1e30};
    std::vector<double> b = {3,   0.5, -3, 0,   -1,  3,       1e30, NAN,
                             127, 128, -4, -45, 1e5, 1.0 / 3, 0.5,  1.5};
    (void)max_ulps(*handle, Mode::POW, {a, b});
    // Negative bases: integer exponents (odd ones negate), others give NaN.
    auto neg = random_values(kN, -10, 10, rng), ints = random_values(kN, -20, 20, rng);
    for (size_t i = 0; i < kN; ++i)
        ints[i] = i % 3 ? std::round(ints[i]) : ints[i];
    (void)max_ulps(*handle, Mode::POW, {neg, ints});
    // ATAN2 in all four quadrants, on the axes (zeros of either sign) and at infinities.
    (void)max_ulps(*handle, Mode::ATAN2,
                   {random_values(kN, -10, 10, rng), random_values(kN, -10, 10, rng)});
    (void)max_ulps(*handle, Mode::ATAN2, {sweep(-3, 3, 64), sweep(3, -3, 64)});
    (void)max_ulps(*handle, Mode::ATAN2,
                   {{0.0, -0.0, 0.0, -0.0, 1, -1, 1e-30, -1e-30, 1, INFINITY, -INFINITY, 3},
                    {1, 1, -1, -1, 0.0, -0.0, -1, -1, 1e30, -INFINITY, 2, -INFINITY}});
    (void)max_ulps(*handle, Mode::GELU_GRAD,
                   {sweep(-40, 40, kN), random_values(kN + 16, -10, 10, rng)});
    (void)max_ulps(*handle, Mode::MOD,
                   {random_values(kN, -1e4, 1e4, rng), random_values(kN, -50, 50, rng)});
}

// POW with one exponent for all elements takes a product (b = 2, naive's bits), a division
// (b = -1, naive's bits), a float cube (b = 3, naive's bits but within 2^-48 of a midpoint), a
// square root (b = 1/2) or repeated squaring (integers up to 64) instead of exp and log: within
// POW's one ULP, with C99's zeros, infinities and NaN (-0 and -inf to odd and even, positive and
// negative powers), at each Highway target; b = 65 and 2.5 still take the general formula. The
// bases include the cube's overflow edge (cbrt(FLT_MAX) = 6.98e12), where a^2 overflows (2^64 =
// 1.8e19) and where it underflows, subnormals and every tail length of a vector.
TEST_F(X86, ElemwisePowByAConstantExponent) {
    std::mt19937 rng(5);
    std::vector<double> a = random_values(4099, -30, 30, rng);
    for (double v : random_values(1024, -1e-3, 1e-3, rng))
        a.push_back(v);
    // Cubes past float's range: where l a of a^3 = (h + l) a overflows (|a| > 2^50.7) too, with
    // either sign of l (0x1.001002p+51: l < 0).
    for (double v : random_values(1024, -1e13, 1e13, rng))
        a.push_back(v);
    for (double v : random_values(256, -1e19, 1e19, rng))
        a.push_back(v);
    for (double v : {0x1.001002p+51, -0x1.001002p+51, 0x1.000002p+51, 0x1.fffffep+63})
        a.push_back(v);
    // Each alone among ordinary bases, at every position of the cube's four-vector step (67
    // apart): the step must see it and blend, and must not blend just below 2^50.
    const double nan = std::nan("");
    for (double v : {0x1.001002p+51, -0x1.001002p+51, 0x1p+50, -0x1p+50, 0x1.fffffep+49,
                     -0x1.fffffep+49, 0x1.fffffep+63, 1e19, std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), nan, -nan}) {
        for (double r : random_values(66, -30, 30, rng))
            a.push_back(r);
        a.push_back(v);
    }
    const double inf = std::numeric_limits<double>::infinity();
    for (double v :
         {0.0,      -0.0,      inf,   -inf,   std::nan(""), 1.0,      -1.0,   3e38,   -3e38,
          1e-45,    -1e-45,    1e-38, 2.0,    0.5,          1e19,     1e-19,  6.9e12, 6.98e12,
          -6.98e12, 6.9814e12, 7e12,  1.8e19, 1.85e19,      -1.85e19, -3e-17, 1e-26})
        a.push_back(v);
    // float_cube: the target has FMA (AVX2, AVX-512), so b = 3 runs in float. Elsewhere it runs
    // in double lanes, whose narrowing to float gives -FLT_MAX for an overflow to -inf (one ULP).
    const auto all = [&](bool float_cube) {
        for (double b :
             {2.0, 0.5, 0.0, 1.0, -1.0, 3.0, -2.0, 4.0, 7.0, -3.0, 64.0, -64.0, 65.0, 2.5, -0.5}) {
            for (size_t n : {a.size(), size_t(1), size_t(5), size_t(16), size_t(17), size_t(33),
                             size_t(41), size_t(67), size_t(81), size_t(97), size_t(131)}) {
                std::vector<double> part(a.end() - static_cast<ptrdiff_t>(n), a.end());
                const int64_t worst = max_ulps(*handle, Mode::POW, {part, {b}});
                // A single product, quotient or fma: naive's bits on these bases.
                if (b == 2.0 || b == -1.0 || (b == 3.0 && float_cube)) {
                    EXPECT_EQ(worst, 0) << "b = " << b << ", n = " << n;
                }
            }
        }
    };
    // Cubes near and below float's smallest normal (|a| < 2^-33): the float cube is within one
    // ULP there, not naive's bits as often.
    std::vector<double> tiny = random_values(1024, -1e-11, 1e-11, rng);
    for (double v : {2.2e-13, 1e-15, 5e-16, -2.3e-13, 1.1e-10, 2.3e-16})
        tiny.push_back(v);
    const auto cubes = [&] { (void)max_ulps(*handle, Mode::POW, {tiny, {3.0}}); };
    all(false);
    cubes();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t target) {
        all(target == HWY_AVX3 || target == HWY_AVX2);
        cubes();
    });
#endif
    // The measure above counts -0 against +0 as one ULP: pow(-0, 1/2) is +0 (sqrt's is -0),
    // pow(-inf, 1/2) +inf, pow(-0, 3) -0, pow(-0, -3) -inf.
    const auto pow_of = [&](std::vector<double> x, double b) {
        std::vector<HostTensor> in{HostTensor::from({x.size()}, x), HostTensor::from({1}, {b})};
        auto op = handle->create_operator<Elemwise>();
        op->param() = mode_param(Mode::POW);
        return run_op(*op, in)[0].values();
    };
    std::vector<double> zeros(20, -0.0), minus_inf(20, -inf);  // past one vector's tail
    for (double r : pow_of(zeros, 0.5))
        EXPECT_TRUE(r == 0 && !std::signbit(r));
    for (double r : pow_of(minus_inf, 0.5))
        EXPECT_EQ(r, inf);
    for (double r : pow_of(zeros, 3))
        EXPECT_TRUE(r == 0 && std::signbit(r));
    for (double r : pow_of(zeros, -3))
        EXPECT_EQ(r, -inf);
    for (double r : pow_of(zeros, -1))
        EXPECT_EQ(r, -inf);
    for (double r : pow_of(minus_inf, 3))
        EXPECT_EQ(r, -inf);
    for (double r : pow_of(minus_inf, -1))
        EXPECT_TRUE(r == 0 && std::signbit(r));
}

TEST_F(X86, ElemwiseMathModIsExact) {
    const double inf = std::numeric_limits<double>::infinity();
    // Signed zeros, exact multiples (zero remainders keep a's sign, then Python's rule), negative
    // divisors, remainders that round when b is added, zero and infinite operands, and quotients
    // past 2^24 (the scalar formula's).
    std::vector<double> a = {0.0,   -0.0, 4, -4,  4, -4,   5.5,   -5.5, 5.5,      -5.5, 1e-7,
                             -1e-7, 1,    1, inf, 3, 1e30, -1e30, 3e7,  16777217, 7,    NAN};
    std::vector<double> b = {3, 3, 2,    2, -2,  -2, 2, 2, -2,  -2,   3,
                             3, 0, -0.0, 3, inf, 7,  7, 3, 0.9, -inf, 1};
    EXPECT_EQ(x86::elemwise_f32_max_ulp(Mode::MOD), 0);
    EXPECT_EQ(max_ulps(*handle, Mode::MOD, {a, b}), 0);
    // Signed zeros count: -0 and +0 are one ULP apart in the measure above, and must match.
    std::vector<HostTensor> in{HostTensor::from({2}, {-4.0, 4.0}), HostTensor::from({2}, {2, -2})};
    auto op = handle->create_operator<Elemwise>();
    op->param() = mode_param(Mode::MOD);
    auto got = run_op(*op, in)[0].values();
    EXPECT_TRUE(got[0] == 0 && std::signbit(got[0]));
    EXPECT_TRUE(got[1] == 0 && !std::signbit(got[1]));
}

TEST_F(X86, ElemwiseTrueDivOfInt32IsExact) {
    Checker<Elemwise> c(handle.get());
    c.set_param(mode_param(Mode::TRUE_DIV)).set_epsilon(0);
    c.set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32);
    c.set_range(0, -1e9, 1e9).set_range(1, -50, 50);
    for (TensorShape s : {TensorShape{0}, TensorShape{1}, TensorShape{7}, TensorShape{13, 17},
                          TensorShape{(1 << 17) + 3}}) {
        c.execs({s, s});
        c.set_noncontiguous(true).execs({s, s});
        c.set_noncontiguous(false);
    }
    c.execs({{13, 17}, {1, 17}}).execs({{13, 17}, {13, 1}}).execs({{1}, {13, 17}});
    // Zero divisors (inf, -inf, NaN) and int32's ends.
    std::vector<double> a = {1, -1, 0, INT32_MAX, INT32_MIN, INT32_MIN, 7, -7, 1, 2, 3};
    std::vector<double> b = {0, 0, 0, 3, -1, INT32_MAX, 2, 2, 3, 3, 3};
    c.set_values(0, a).set_values(1, b).execs({{a.size()}, {a.size()}});
    std::vector<HostTensor> in{HostTensor::from({2}, {7, -7}, dtype::Int32),
                               HostTensor::from({2}, {2, 0}, dtype::Int32)};
    EXPECT_TRUE(run_and_compare<Elemwise>(*handle, mode_param(Mode::TRUE_DIV), in, {}, 0)
                        .starts_with("hwy:"));
}

// The float32 modes of elemwise_math_hwy.cpp no longer warn of a naive fallback.
TEST_F(X86, ElemwiseMathModesDoNotWarn) {
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    std::mt19937 rng(3);
    for (Mode m : {Mode::EXP, Mode::POW, Mode::MOD, Mode::FLOOR_DIV, Mode::TAN, Mode::SIN,
                   Mode::COS, Mode::ERF, Mode::ERFC, Mode::ERFINV, Mode::ERFCINV, Mode::GELU,
                   Mode::GELU_GRAD, Mode::SIGMOID, Mode::SILU}) {
        std::vector<HostTensor> in;
        for (size_t i = 0; i < arity(m); ++i)
            in.push_back(HostTensor::from({64}, random_values(64, 0.1, 0.9, rng)));
        auto op = handle->create_operator<Elemwise>();
        op->param() = mode_param(m);
        run_op(*op, in);
        EXPECT_TRUE(last_kernel(*op).starts_with("hwy:")) << param::to_string(m);
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning: Elemwise"), std::string::npos) << err;
}
