// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has. SSSE3/SSE4 and AVX3_DL are left out: the
// machines this runs on have AVX2 or AVX-512, and each target costs compile time.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/elemwise_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
// clang-format on

#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using Mode = elemwise::Mode;

// Naive's formula for element i: the tail of a run and the lanes the vector math does not cover.
HWY_INLINE void scalar_at(Mode mode, const ElemwiseSrc* s, size_t arity, float* dst, size_t i) {
    double x[4] = {};
    for (size_t k = 0; k < arity; ++k)
        x[k] = s[k].broadcast ? *s[k].p : s[k].p[i];
    dst[i] = static_cast<float>(naive::elemwise::eval_float(mode, x));
}

template <class D>
HWY_INLINE hn::Vec<D> load(D d, const ElemwiseSrc& s, size_t i) {
    return s.broadcast ? hn::Set(d, *s.p) : hn::LoadU(d, s.p + i);
}

// Float formulas: one IEEE operation or comparisons, so float gives naive's rounding.
template <size_t kArity, class F>
HWY_INLINE void run_float(Mode mode, const ElemwiseSrc* s, float* dst, size_t n, F f) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        if constexpr (kArity == 1)
            hn::StoreU(f(d, load(d, s[0], i)), d, dst + i);
        else if constexpr (kArity == 2)
            hn::StoreU(f(d, load(d, s[0], i), load(d, s[1], i)), d, dst + i);
        else
            hn::StoreU(f(d, load(d, s[0], i), load(d, s[1], i), load(d, s[2], i)), d, dst + i);
    }
    for (; i < n; ++i)
        scalar_at(mode, s, kArity, dst, i);
}

// Double formulas, rounded once to float. F::special(d, x0) marks lanes (by the first operand)
// that the vector formula does not cover; a vector holding one is redone by the scalar formula.
template <size_t kArity, class F>
HWY_INLINE void run_double(Mode mode, const ElemwiseSrc* s, float* dst, size_t n, F f) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        hn::Vec<decltype(dd)> x[kArity];
        for (size_t k = 0; k < kArity; ++k)
            x[k] = hn::PromoteTo(dd, load(df, s[k], i));
        hn::Vec<decltype(dd)> y;
        if constexpr (kArity == 1)
            y = f(dd, x[0]);
        else if constexpr (kArity == 2)
            y = f(dd, x[0], x[1]);
        else if constexpr (kArity == 3)
            y = f(dd, x[0], x[1], x[2]);
        else
            y = f(dd, x[0], x[1], x[2], x[3]);
        hn::StoreU(hn::DemoteTo(df, y), df, dst + i);
        if (!hn::AllFalse(dd, f.special(dd, x[0])))
            for (size_t j = i; j < i + lanes; ++j)
                scalar_at(mode, s, kArity, dst, j);
    }
    for (; i < n; ++i)
        scalar_at(mode, s, kArity, dst, i);
}

// Lanes with |x| > limit or NaN.
template <class D, class V>
HWY_INLINE auto outside(D d, V x, double limit) {
    return hn::Not(hn::Le(hn::Abs(x), hn::Set(d, limit)));
}

struct NoSpecial {
    template <class D, class V>
    auto special(D d, V) const {
        return hn::FirstN(d, 0);
    }
};

// exp and its relatives take |x| <= 700 (exp stays finite in double); tanh |x| <= 20 (beyond,
// its exp-based formula is not relied on: the scalar one gives +-1).
struct ExpRange {
    template <class D, class V>
    auto special(D d, V x) const {
        return outside(d, x, 700.0);
    }
};
struct TanhRange {
    template <class D, class V>
    auto special(D d, V x) const {
        return outside(d, x, 20.0);
    }
};
// log takes finite x > 0, log1p finite x > -1.
template <int kLowest>
struct LogRange {
    template <class D, class V>
    auto special(D d, V x) const {
        return hn::Not(hn::And(hn::Gt(x, hn::Set(d, double(kLowest))), hn::IsFinite(x)));
    }
};

template <class D, class V>
HWY_INLINE V sigmoid(D d, V x) {
    const V one = hn::Set(d, 1.0);
    return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(x))));
}

struct Exp : ExpRange {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Exp(d, x);
    }
};
struct Expm1 : ExpRange {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Expm1(d, x);
    }
};
struct Log : LogRange<0> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Log(d, x);
    }
};
struct Log1p : LogRange<-1> {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Log1p(d, x);
    }
};
struct Tanh : TanhRange {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Tanh(d, x);
    }
};
struct Sigmoid : ExpRange {
    template <class D, class V>
    V operator()(D d, V x) const {
        return sigmoid(d, x);
    }
};
struct Silu : ExpRange {
    template <class D, class V>
    V operator()(D d, V x) const {
        return hn::Mul(x, sigmoid(d, x));
    }
};
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
struct Abs {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Abs(a);
    }
};
struct Negate {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Neg(a);
    }
};
struct Square {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Mul(a, a);
    }
};
struct Sqrt {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Sqrt(a);
    }
};
struct AddOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Add(a, b);
    }
};
struct SubOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Sub(a, b);
    }
};
struct MulOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Mul(a, b);
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
// (x, dy): dy where x > 0, else 0 (RELU's gradient).
struct SwitchGt0 {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), dy);
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

// Returns false for a mode this file does not compute.
bool Elemwise(Mode mode, const ElemwiseSrc* s, float* dst, size_t n) {
    switch (mode) {
        case Mode::RELU:
            return run_float<1>(mode, s, dst, n, Relu()), true;
        case Mode::ABS:
            return run_float<1>(mode, s, dst, n, Abs()), true;
        case Mode::NEGATE:
            return run_float<1>(mode, s, dst, n, Negate()), true;
        case Mode::SQUARE:
            return run_float<1>(mode, s, dst, n, Square()), true;
        case Mode::SQRT:
            return run_float<1>(mode, s, dst, n, Sqrt()), true;
        case Mode::ADD:
            return run_float<2>(mode, s, dst, n, AddOp()), true;
        case Mode::SUB:
            return run_float<2>(mode, s, dst, n, SubOp()), true;
        case Mode::MUL:
            return run_float<2>(mode, s, dst, n, MulOp()), true;
        case Mode::TRUE_DIV:
            return run_float<2>(mode, s, dst, n, DivOp()), true;
        case Mode::MAX:
            return run_float<2>(mode, s, dst, n, MaxOp()), true;
        case Mode::MIN:
            return run_float<2>(mode, s, dst, n, MinOp()), true;
        case Mode::SWITCH_GT0:
            return run_float<2>(mode, s, dst, n, SwitchGt0()), true;
        case Mode::CLIP:
            return run_float<3>(mode, s, dst, n, Clip()), true;
        case Mode::EXP:
            return run_double<1>(mode, s, dst, n, Exp()), true;
        case Mode::EXPM1:
            return run_double<1>(mode, s, dst, n, Expm1()), true;
        case Mode::LOG:
            return run_double<1>(mode, s, dst, n, Log()), true;
        case Mode::LOG1P:
            return run_double<1>(mode, s, dst, n, Log1p()), true;
        case Mode::TANH:
            return run_double<1>(mode, s, dst, n, Tanh()), true;
        case Mode::SIGMOID:
            return run_double<1>(mode, s, dst, n, Sigmoid()), true;
        case Mode::SILU:
            return run_double<1>(mode, s, dst, n, Silu()), true;
        case Mode::RSQRT:
            return run_double<1>(mode, s, dst, n, Rsqrt()), true;
        case Mode::SIGMOID_GRAD:
            return run_double<2>(mode, s, dst, n, SigmoidGrad()), true;
        case Mode::TANH_GRAD:
            return run_double<2>(mode, s, dst, n, TanhGrad()), true;
        case Mode::FUSE_MUL_ADD3:
            return run_double<3>(mode, s, dst, n, FuseMulAdd3()), true;
        case Mode::FUSE_MUL_ADD4:
            return run_double<4>(mode, s, dst, n, FuseMulAdd4()), true;
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
    // An empty run touches no memory: this asks the mode switch itself, the one list of modes.
    return HWY_DYNAMIC_DISPATCH(Elemwise)(mode, nullptr, nullptr, 0);
}

void elemwise_f32(elemwise::Mode mode, const ElemwiseSrc* srcs, float* dst, size_t n) {
    (void)HWY_DYNAMIC_DISPATCH(Elemwise)(mode, srcs, dst, n);
}

const char* elemwise_target() {
    return HWY_DYNAMIC_DISPATCH(Target)();
}

}  // namespace neomeg::dnn::x86
#endif
