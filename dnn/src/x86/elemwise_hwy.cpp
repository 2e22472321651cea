// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has. SSSE3/SSE4 and AVX3_DL are left out: the
// machines this runs on have AVX2 or AVX-512, and each target costs compile time. This file holds
// the float32 -> float32 modes; elemwise_int_hwy.cpp the integer, comparison and bool ones.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/elemwise_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#include "src/x86/elemwise_f32_hwy-inl.h"
#include "src/x86/elemwise_hwy-inl.h"
// clang-format on

#include <algorithm>

#include "neomeg/dnn/operators/elemwise.h"
#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_int_hwy.h"
#include "src/x86/elemwise_math_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using Mode = elemwise::Mode;

// Float formulas: one IEEE operation or comparisons, so float gives naive's rounding, in every
// lane alike. So the tail of a run is one vector too, under a mask: short runs (a broadcast over
// H*W = 9 or 49 elements) would otherwise spend most of their time in the scalar formula. AVX2's
// and AVX-512's masked loads and stores touch nothing past the run; other targets' may read it.
template <size_t kArity, class F>
HWY_INLINE void run_float(Mode mode, const ElemwiseSrc* s, float* dst, size_t n, F f) {
    const hn::ScalableTag<float> d;
    const size_t whole = n / hn::Lanes(d) * hn::Lanes(d);
    auto store = [&](size_t i, auto v) { hn::StoreU(v, d, dst + i); };
    auto scalar = [&](size_t i) { scalar_at(mode, s, kArity, dst, i); };
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    run_lanes<kArity>(d, s, whole, f, store, scalar);
    if (whole == n)
        return;
    const auto m = hn::FirstN(d, n - whole);
    hn::Vec<decltype(d)> x[kArity];
    for (size_t k = 0; k < kArity; ++k) {
        const float* p = static_cast<const float*>(s[k].p);
        x[k] = s[k].broadcast ? hn::Set(d, *p) : hn::MaskedLoad(m, d, p + whole);
    }
    hn::BlendedStore(apply(f, d, x), m, d, dst + whole);
#else
    (void)whole;
    run_lanes<kArity>(d, s, n, f, store, scalar);
#endif
}

// exp and its relatives take |x| <= 700 (exp stays finite in double).
struct ExpRange {
    template <class D, class V>
    auto special(D d, const V* x) const {
        return outside(d, x[0], 700.0);
    }
};

template <class D, class V>
HWY_INLINE V sigmoid(D d, V x) {
    const V one = hn::Set(d, 1.0);
    return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(x))));
}

struct Rsqrt : NoSpecial {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Div(hn::Set(d, 1.0), hn::Sqrt(x));
    }
};
// (y, dy) with y the forward output: dy * y * (1 - y), dy * (1 - y * y).
struct SigmoidGrad : NoSpecial {
    template <class D, class V>
    V operator()(D d, V y, V dy) const {
        return hn::Mul(hn::Mul(dy, y), hn::Sub(hn::Set(d, 1.0), y));
    }
};
struct TanhGrad : NoSpecial {
    template <class D, class V>
    V operator()(D d, V y, V dy) const {
        return hn::Mul(dy, hn::Sub(hn::Set(d, 1.0), hn::Mul(y, y)));
    }
};
struct FuseMulAdd3 : NoSpecial {
    template <class D, class V>
    V operator()(D, V a, V b, V c) const {
        return hn::Add(hn::Mul(a, b), c);
    }
};
struct FuseMulAdd4 : NoSpecial {
    template <class D, class V>
    V operator()(D, V a, V b, V c, V e) const {
        return hn::Add(hn::Mul(a, b), hn::Mul(c, e));
    }
};

struct Relu {
    template <class D, class V>
    V operator()(D d, V a) const {
        return hn::IfThenElseZero(hn::Gt(a, hn::Zero(d)), a);
    }
};
struct Negate {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Neg(a);
    }
};
struct Sqrt {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Sqrt(a);
    }
};
struct DivOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Div(a, b);
    }
};
// std::max/std::min's choice (the first operand on ties, so max(-0, +0) = -0), NaN if either is.
struct MaxOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        V r = hn::IfThenElse(hn::Lt(a, b), b, a);
        return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
    }
};
struct MinOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        V r = hn::IfThenElse(hn::Lt(b, a), b, a);
        return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
    }
};
// NumPy's clip: max with lo first, then min with hi, so hi wins where lo > hi; NaN x stays NaN.
struct Clip {
    template <class D, class V>
    V operator()(D, V x, V lo, V hi) const {
        V t = hn::IfThenElse(hn::Lt(x, lo), lo, x);
        return hn::IfThenElse(hn::Gt(t, hi), hi, t);
    }
};

// std::round: halves away from zero. x - trunc(x) is exact in float; zero and NaN keep trunc's.
struct Round {
    template <class D, class V>
    V operator()(D d, V x) const {
        V t = hn::Trunc(x);
        auto away = hn::Ge(hn::Abs(hn::Sub(x, t)), hn::Set(d, 0.5f));
        return hn::IfThenElse(away, hn::Add(t, hn::CopySignToAbs(hn::Set(d, 1.0f), x)), t);
    }
};
struct Floor {
    template <class D, class V>
    V operator()(D, V x) const {
        return hn::Floor(x);
    }
};
struct Ceil {
    template <class D, class V>
    V operator()(D, V x) const {
        return hn::Ceil(x);
    }
};
// 1, -1 or +0; NaN stays itself.
template <class D, class V>
HWY_INLINE V sign(D d, V x) {
    V s = hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Set(d, 1.0f), hn::Zero(d));
    s = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, -1.0f), s);
    return hn::IfThenElse(hn::IsNaN(x), x, s);
}
struct Sign {
    template <class D, class V>
    V operator()(D d, V x) const {
        return sign(d, x);
    }
};
// std::clamp(x, lo, hi), whose comparisons leave NaN x alone.
template <class D, class V>
HWY_INLINE V clamp(D d, V x, double lo, double hi) {
    using T = hn::TFromD<D>;
    V l = hn::Set(d, T(lo)), h = hn::Set(d, T(hi));
    return hn::IfThenElse(hn::Lt(x, l), l, hn::IfThenElse(hn::Lt(h, x), h, x));
}
struct Relu6 {
    template <class D, class V>
    V operator()(D d, V x) const {
        return clamp(d, x, 0, 6);
    }
};
struct Relu6Grad {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        auto out = hn::Or(hn::Le(x, hn::Zero(d)), hn::Ge(x, hn::Set(d, 6.0f)));
        return hn::IfThenZeroElse(out, dy);
    }
};
// dy / 6 is one division: float rounds it as double then float do.
struct HsigmoidGrad {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        auto out = hn::Or(hn::Le(x, hn::Set(d, -3.0f)), hn::Ge(x, hn::Set(d, 3.0f)));
        return hn::IfThenZeroElse(out, hn::Div(dy, hn::Set(d, 6.0f)));
    }
};

// In float, naive's (MegEngine's) order: relu6(x + 3) / 6 and (x * relu6(x + 3)) * (1 / 6).
struct Hsigmoid {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Div(clamp(d, hn::Add(x, hn::Set(d, 3.0f)), 0, 6), hn::Set(d, 6.0f));
    }
};
struct HSwish {
    template <class D, class V>
    V operator()(D d, V x) const {
        V t = clamp(d, hn::Add(x, hn::Set(d, 3.0f)), 0, 6);
        return hn::Mul(hn::Mul(x, t), hn::Set(d, 1.0f / 6.0f));
    }
};
struct HSwishGrad : NoSpecial {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        V mid = hn::Div(hn::Mul(dy, hn::Add(hn::Add(x, x), hn::Set(d, 3.0))), hn::Set(d, 6.0));
        V r = hn::IfThenElse(hn::Gt(x, hn::Set(d, 3.0)), dy, mid);
        return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -3.0)), r);
    }
};
struct FloorDiv : NoSpecial {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Floor(hn::Div(a, b));
    }
};
struct SoftplusGrad : ExpRange {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        return hn::Mul(dy, sigmoid(d, x));
    }
};
struct LogSigmoidGrad : ExpRange {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        return hn::Mul(dy, sigmoid(d, hn::Neg(x)));
    }
};
struct SiluGrad : ExpRange {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        const V one = hn::Set(d, 1.0);
        V s = sigmoid(d, x);
        return hn::Mul(hn::Mul(dy, s), hn::Add(one, hn::Mul(x, hn::Sub(one, s))));
    }
};
// max(a, b) + log1p(exp(-|a - b|)); non-finite operands take naive's special cases.
struct LogSumExp {
    template <class D, class V>
    V operator()(D d, V a, V b) const {
        V e = hn::Exp(d, hn::Neg(hn::Abs(hn::Sub(a, b))));
        return hn::Add(hn::Max(a, b), hn::Log1p(d, e));
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Or(outside(d, x[0], 1e300),
                      hn::Or(outside(d, x[1], 1e300), outside(d, hn::Sub(x[0], x[1]), 700.0)));
    }
};
// Trigonometric and hyperbolic functions inside the domains where Highway's math is accurate.
template <int kLimit>
struct Within {
    template <class D, class V>
    auto special(D d, const V* x) const {
        return outside(d, x[0], double(kLimit));
    }
};
struct Asin : Within<1> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Asin(d, x);
    }
};
struct Acos : Within<1> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Acos(d, x);
    }
};
// Every finite input.
struct Finite {
    template <class D, class V>
    auto special(D, const V* x) const {
        return hn::Not(hn::IsFinite(x[0]));
    }
};
struct Atan : Finite {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Atan(d, x);
    }
};
struct Asinh : Finite {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Asinh(d, x);
    }
};
struct Sinh : Within<700> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Sinh(d, x);
    }
};
struct Cosh : Within<700> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Mul(hn::Set(d, 0.5), hn::Add(hn::Exp(d, x), hn::Exp(d, hn::Neg(x))));
    }
};
// acosh takes finite x >= 1.
struct Acosh {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Acosh(d, x);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::And(hn::Ge(x[0], hn::Set(d, 1.0)), hn::IsFinite(x[0])));
    }
};

// run(t, o) for each of rows->count runs, t the run's operands and o its dst; one run (s, dst)
// where rows is null.
template <size_t kArity, class Run>
HWY_INLINE void each_row(const ElemwiseSrc* s, float* dst, const ElemwiseRows* rows,
                         const Run& run) {
    if (!rows)
        return run(s, dst);
    ElemwiseSrc t[kArity];
    std::copy_n(s, kArity, t);
    for (size_t r = 0; r < rows->count; ++r) {
        run(static_cast<const ElemwiseSrc*>(t), dst);
        for (size_t k = 0; k < kArity; ++k)
            t[k].p = static_cast<const float*>(t[k].p) + rows->step[k];
        dst += rows->dst_step;
    }
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// Whether rows that follow one another in memory (every dense operand and dst stepping n) can run
// as one: runs of at least a vector, so that a vector meets at most two of them.
HWY_INLINE bool joinable(size_t arity, const ElemwiseSrc* s, size_t n, const ElemwiseRows& rows) {
    if (n < hn::Lanes(hn::ScalableTag<float>()) || rows.dst_step != static_cast<ptrdiff_t>(n))
        return false;
    for (size_t k = 0; k < arity; ++k)
        if (!s[k].broadcast && rows.step[k] != static_cast<ptrdiff_t>(n))
            return false;
    return true;
}

// A float formula over joinable rows as one run of count * n elements; a broadcast operand takes
// its run's value in each lane: the vector that crosses from run r into r + 1 takes r's below the
// boundary and r + 1's above, and r + 1's whole vectors start after it. Per run, a per-channel
// operand over 7 x 7 images (49 elements: three vectors and a masked one on AVX-512) spent more in
// the masked tail and the loop's setup than in its vectors: (32, 512, 7, 7) * (1, 512, 1, 1) took
// 0.149 ms at one thread run by run, 0.069 with a scalar operand. The values are run_float's: each
// lane's formula is the same.
template <size_t kArity, class F>
HWY_INLINE void run_float_joined(const ElemwiseSrc* s, float* dst, size_t n,
                                 const ElemwiseRows& rows, const F& f) {
    const hn::ScalableTag<float> d;
    using V = hn::Vec<decltype(d)>;
    const size_t lanes = hn::Lanes(d), total = rows.count * n;
    const float* p[kArity];
    for (size_t k = 0; k < kArity; ++k)
        p[k] = static_cast<const float*>(s[k].p);
    // Broadcast operand k's value in run r.
    auto value = [&](size_t k, size_t r) {
        return hn::Set(d, p[k][static_cast<ptrdiff_t>(r) * rows.step[k]]);
    };
    size_t i = 0;  // the next element; runs before it are done, and part of this one
    for (size_t r = 0; r < rows.count; ++r) {
        const size_t end = (r + 1) * n;
        V x[kArity], w[kArity];
        for (size_t k = 0; k < kArity; ++k)
            if (s[k].broadcast)
                w[k] = value(k, r);
        for (; i + lanes <= end; i += lanes) {
            for (size_t k = 0; k < kArity; ++k)
                x[k] = s[k].broadcast ? w[k] : hn::LoadU(d, p[k] + i);
            hn::StoreU(apply(f, d, x), d, dst + i);
        }
        if (i == end)
            continue;
        // The vector across this run's end: `left` lanes of it, the rest of the next run's (or,
        // after the last run, none: a masked load and store).
        const size_t left = end - i, count = std::min(lanes, total - i);
        const auto here = hn::FirstN(d, left);
        for (size_t k = 0; k < kArity; ++k) {
            if (!s[k].broadcast)
                x[k] = count == lanes ? hn::LoadU(d, p[k] + i)
                                      : hn::MaskedLoad(hn::FirstN(d, count), d, p[k] + i);
            else
                x[k] = count == left ? w[k] : hn::IfThenElse(here, w[k], value(k, r + 1));
        }
        if (count == lanes)
            hn::StoreU(apply(f, d, x), d, dst + i);
        else
            hn::BlendedStore(apply(f, d, x), hn::FirstN(d, count), d, dst + i);
        i += count;
    }
}
#endif

template <size_t kArity, class F>
HWY_INLINE void run_float(Mode mode, const ElemwiseSrc* s, float* dst, size_t n,
                          const ElemwiseRows* rows, F f) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    if (rows && joinable(kArity, s, n, *rows))
        return run_float_joined<kArity>(s, dst, n, *rows, f);
#endif
    each_row<kArity>(s, dst, rows,
                     [&](const ElemwiseSrc* t, float* o) { run_float<kArity>(mode, t, o, n, f); });
}

template <size_t kArity, class F>
HWY_INLINE void run_double(Mode mode, const ElemwiseSrc* s, float* dst, size_t n,
                           const ElemwiseRows* rows, F f) {
    each_row<kArity>(s, dst, rows,
                     [&](const ElemwiseSrc* t, float* o) { run_double<kArity>(mode, t, o, n, f); });
}

// The mode's loop over the runs `rows` describes (one run where it is null). Returns false for a
// mode this file does not compute.
bool Elemwise(Mode mode, const ElemwiseSrc* s, float* dst, size_t n, const ElemwiseRows* rows) {
    switch (mode) {
        case Mode::RELU:
            return run_float<1>(mode, s, dst, n, rows, Relu()), true;
        case Mode::ABS:
            return run_float<1>(mode, s, dst, n, rows, Abs()), true;
        case Mode::NEGATE:
            return run_float<1>(mode, s, dst, n, rows, Negate()), true;
        case Mode::SQUARE:
            return run_float<1>(mode, s, dst, n, rows, Square()), true;
        case Mode::SQRT:
            return run_float<1>(mode, s, dst, n, rows, Sqrt()), true;
        case Mode::ADD:
            return run_float<2>(mode, s, dst, n, rows, AddOp()), true;
        case Mode::SUB:
            return run_float<2>(mode, s, dst, n, rows, SubOp()), true;
        case Mode::MUL:
            return run_float<2>(mode, s, dst, n, rows, MulOp()), true;
        case Mode::TRUE_DIV:
            return run_float<2>(mode, s, dst, n, rows, DivOp()), true;
        case Mode::MAX:
            return run_float<2>(mode, s, dst, n, rows, MaxOp()), true;
        case Mode::MIN:
            return run_float<2>(mode, s, dst, n, rows, MinOp()), true;
        case Mode::SWITCH_GT0:
            return run_float<2>(mode, s, dst, n, rows, SwitchGt0()), true;
        case Mode::PRELU:
            return run_float<2>(mode, s, dst, n, rows, PRelu()), true;
        case Mode::CLIP:
            return run_float<3>(mode, s, dst, n, rows, Clip()), true;
        case Mode::RSQRT:
            return run_double<1>(mode, s, dst, n, rows, Rsqrt()), true;
        case Mode::SIGMOID_GRAD:
            return run_double<2>(mode, s, dst, n, rows, SigmoidGrad()), true;
        case Mode::TANH_GRAD:
            return run_double<2>(mode, s, dst, n, rows, TanhGrad()), true;
        case Mode::FUSE_MUL_ADD3:
            return run_double<3>(mode, s, dst, n, rows, FuseMulAdd3()), true;
        case Mode::FUSE_MUL_ADD4:
            return run_double<4>(mode, s, dst, n, rows, FuseMulAdd4()), true;
        case Mode::ROUND:
            return run_float<1>(mode, s, dst, n, rows, Round()), true;
        case Mode::FLOOR:
            return run_float<1>(mode, s, dst, n, rows, Floor()), true;
        case Mode::CEIL:
            return run_float<1>(mode, s, dst, n, rows, Ceil()), true;
        case Mode::SIGN:
            return run_float<1>(mode, s, dst, n, rows, Sign()), true;
        case Mode::RELU6:
            return run_float<1>(mode, s, dst, n, rows, Relu6()), true;
        case Mode::ABS_GRAD:
            return run_float<2>(mode, s, dst, n, rows, AbsGrad()), true;
        case Mode::RELU6_GRAD:
            return run_float<2>(mode, s, dst, n, rows, Relu6Grad()), true;
        case Mode::HSIGMOID_GRAD:
            return run_float<2>(mode, s, dst, n, rows, HsigmoidGrad()), true;
        case Mode::HSIGMOID:
            return run_float<1>(mode, s, dst, n, rows, Hsigmoid()), true;
        case Mode::H_SWISH:
            return run_float<1>(mode, s, dst, n, rows, HSwish()), true;
        case Mode::H_SWISH_GRAD:
            return run_double<2>(mode, s, dst, n, rows, HSwishGrad()), true;
        case Mode::FLOOR_DIV:
            return run_double<2>(mode, s, dst, n, rows, FloorDiv()), true;
        case Mode::SOFTPLUS_GRAD:
            return run_double<2>(mode, s, dst, n, rows, SoftplusGrad()), true;
        case Mode::LOGSIGMOID_GRAD:
            return run_double<2>(mode, s, dst, n, rows, LogSigmoidGrad()), true;
        case Mode::SILU_GRAD:
            return run_double<2>(mode, s, dst, n, rows, SiluGrad()), true;
        case Mode::LOG_SUM_EXP:
            return run_double<2>(mode, s, dst, n, rows, LogSumExp()), true;
        case Mode::ASIN:
            return run_double<1>(mode, s, dst, n, rows, Asin()), true;
        case Mode::ACOS:
            return run_double<1>(mode, s, dst, n, rows, Acos()), true;
        case Mode::ATAN:
            return run_double<1>(mode, s, dst, n, rows, Atan()), true;
        case Mode::ASINH:
            return run_double<1>(mode, s, dst, n, rows, Asinh()), true;
        case Mode::SINH:
            return run_double<1>(mode, s, dst, n, rows, Sinh()), true;
        case Mode::COSH:
            return run_double<1>(mode, s, dst, n, rows, Cosh()), true;
        case Mode::ACOSH:
            return run_double<1>(mode, s, dst, n, rows, Acosh()), true;
        default:
            return false;
    }
}

const char* Target() {
    return hwy::TargetName(HWY_TARGET);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Elemwise);
HWY_EXPORT(Target);

bool elemwise_f32_supported(elemwise::Mode mode) {
    // An empty run touches no memory: this asks the mode switches themselves, the lists of modes.
    return HWY_DYNAMIC_DISPATCH(Elemwise)(mode, nullptr, nullptr, 0, nullptr) ||
           elemwise_math_run(mode, dtype::Float32, dtype::Float32, nullptr, nullptr, 0);
}

bool elemwise_supported(elemwise::Mode mode, DType data, DType dst) {
    if (data == dtype::Float32 && dst == dtype::Float32 && elemwise_f32_supported(mode))
        return true;
    return elemwise_int_run(mode, data, dst, nullptr, nullptr, 0) ||
           elemwise_math_run(mode, data, dst, nullptr, nullptr, 0);
}

void elemwise_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                  void* dst, size_t n) {
    if (data == dtype::Float32 && dst_dtype == dtype::Float32 &&
        HWY_DYNAMIC_DISPATCH(Elemwise)(mode, srcs, static_cast<float*>(dst), n, nullptr))
        return;
    if (!elemwise_int_run(mode, data, dst_dtype, srcs, dst, n))
        (void)elemwise_math_run(mode, data, dst_dtype, srcs, dst, n);
}

bool elemwise_run_rows(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                       void* dst, size_t n, const ElemwiseRows& rows) {
    return data == dtype::Float32 && dst_dtype == dtype::Float32 &&
           HWY_DYNAMIC_DISPATCH(Elemwise)(mode, srcs, static_cast<float*>(dst), n, &rows);
}

const char* elemwise_target() {
    return HWY_DYNAMIC_DISPATCH(Target)();
}

}  // namespace neomeg::dnn::x86
#endif
