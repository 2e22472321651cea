// Elemwise on int32 data, comparisons into bool and the logical modes on bool, compiled once per
// instruction set like elemwise_hwy.cpp. Integer vectors wrap modulo 2^32, which is what naive's
// int64 formulas give once narrowed to int32; float comparisons are exact in float.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/elemwise_int_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/elemwise_hwy-inl.h"
// clang-format on

#include <cstdint>

#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_int_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using Mode = elemwise::Mode;

// Naive's formula for element i of operands of type T, in its arithmetic (double for float,
// int64 otherwise); `data` is the data dtype (shift widths).
template <class T>
HWY_INLINE auto scalar_eval(Mode mode, const ElemwiseSrc* s, size_t arity, size_t i, DType data) {
    const auto at = [&](size_t k) {
        const T* p = static_cast<const T*>(s[k].p);
        return s[k].broadcast ? *p : p[i];
    };
    if constexpr (std::is_same_v<T, float>) {
        double x[4] = {};
        for (size_t k = 0; k < arity; ++k)
            x[k] = at(k);
        return naive::elemwise::eval_float(mode, x) != 0;
    } else {
        int64_t x[4] = {};
        for (size_t k = 0; k < arity; ++k)
            x[k] = static_cast<int64_t>(at(k));
        return naive::elemwise::eval_int(mode, x, data);
    }
}

// int32 -> int32.
template <size_t kArity, class F>
HWY_INLINE void run_i32(Mode mode, const ElemwiseSrc* s, int32_t* dst, size_t n, F f) {
    const hn::ScalableTag<int32_t> d;
    run_lanes<kArity>(
            d, s, n, f, [&](size_t i, auto v) { hn::StoreU(v, d, dst + i); },
            [&](size_t i) {
                dst[i] = static_cast<int32_t>(
                        scalar_eval<int32_t>(mode, s, kArity, i, dtype::Int32));
            });
}

// Lanes of T whose mask f gives -> bool (0 or 1 bytes).
template <class T, size_t kArity, class F>
HWY_INLINE void run_to_bool(Mode mode, const ElemwiseSrc* s, uint8_t* dst, size_t n, F f) {
    const hn::ScalableTag<T> d;
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<uint8_t, decltype(d)> du8;
    run_lanes<kArity>(
            d, s, n, f,
            [&](size_t i, auto m) {
                auto one = hn::And(hn::BitCast(di, hn::VecFromMask(d, m)), hn::Set(di, 1));
                hn::StoreU(hn::DemoteTo(du8, one), du8, dst + i);
            },
            [&](size_t i) { dst[i] = scalar_eval<T>(mode, s, kArity, i, dtype::Int32) != 0; });
}

// bool -> bool, bytes of 0 or 1.
template <size_t kArity, class F>
HWY_INLINE void run_bool(Mode mode, const ElemwiseSrc* s, uint8_t* dst, size_t n, F f) {
    const hn::ScalableTag<uint8_t> d;
    run_lanes<kArity>(
            d, s, n, f, [&](size_t i, auto v) { hn::StoreU(v, d, dst + i); },
            [&](size_t i) { dst[i] = scalar_eval<uint8_t>(mode, s, kArity, i, dtype::Bool) != 0; });
}

struct MaxOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Max(a, b);
    }
};
struct MinOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Min(a, b);
    }
};
struct Relu {
    template <class D, class V>
    V operator()(D d, V a) const {
        return hn::Max(a, hn::Zero(d));
    }
};
// Neg of INT32_MIN gives INT32_MIN, as naive's int64 result narrowed.
struct Negate {
    template <class D, class V>
    V operator()(D d, V a) const {
        return hn::Sub(hn::Zero(d), a);
    }
};
// ROUND, FLOOR and CEIL of an integer.
struct Identity {
    template <class D, class V>
    V operator()(D, V a) const {
        return a;
    }
};
template <class D, class V>
HWY_INLINE V sign(D d, V a) {
    V s = hn::IfThenElseZero(hn::Gt(a, hn::Zero(d)), hn::Set(d, 1));
    return hn::IfThenElse(hn::Lt(a, hn::Zero(d)), hn::Set(d, -1), s);
}
struct Sign {
    template <class D, class V>
    V operator()(D d, V a) const {
        return sign(d, a);
    }
};
// NumPy's order: hi wins where lo > hi.
struct Clip {
    template <class D, class V>
    V operator()(D, V x, V lo, V hi) const {
        return hn::Min(hn::Max(x, lo), hi);
    }
};
struct FuseMulAdd3 {
    template <class D, class V>
    V operator()(D, V a, V b, V c) const {
        return hn::Add(hn::Mul(a, b), c);
    }
};
struct FuseMulAdd4 {
    template <class D, class V>
    V operator()(D, V a, V b, V c, V e) const {
        return hn::Add(hn::Mul(a, b), hn::Mul(c, e));
    }
};
struct AndOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::And(a, b);
    }
};
struct OrOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Or(a, b);
    }
};
struct XorOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Xor(a, b);
    }
};
// Counts outside [0, 32) give 0 (SHL) or the sign fill (SHR), as naive's formulas.
template <class D, class V>
HWY_INLINE auto count_ok(D d, V c) {
    return hn::And(hn::Gt(c, hn::Set(d, -1)), hn::Lt(c, hn::Set(d, 32)));
}
struct Shl {
    template <class D, class V>
    V operator()(D d, V a, V c) const {
        return hn::IfThenElseZero(count_ok(d, c), a << hn::IfThenElseZero(count_ok(d, c), c));
    }
};
struct Shr {
    template <class D, class V>
    V operator()(D d, V a, V c) const {
        return hn::IfThenElse(count_ok(d, c), a >> hn::IfThenElseZero(count_ok(d, c), c),
                              hn::ShiftRight<31>(a));
    }
};
struct Not {
    template <class D, class V>
    V operator()(D d, V a) const {
        return hn::IfThenElseZero(hn::Eq(a, hn::Zero(d)), hn::Set(d, 1));
    }
};

// Comparisons give masks.
struct Eq {
    template <class D, class V>
    auto operator()(D, V a, V b) const {
        return hn::Eq(a, b);
    }
};
struct Ne {
    template <class D, class V>
    auto operator()(D, V a, V b) const {
        return hn::Not(hn::Eq(a, b));
    }
};
struct Lt {
    template <class D, class V>
    auto operator()(D, V a, V b) const {
        return hn::Lt(a, b);
    }
};
struct Leq {
    template <class D, class V>
    auto operator()(D, V a, V b) const {
        return hn::Not(hn::Lt(b, a));
    }
};
// Float LEQ: a NaN operand gives false, which Not(b < a) would not.
struct LeqF {
    template <class D, class V>
    auto operator()(D, V a, V b) const {
        return hn::Le(a, b);
    }
};
struct IsNan {
    template <class D, class V>
    auto operator()(D, V a) const {
        return hn::IsNaN(a);
    }
};
struct IsInf {
    template <class D, class V>
    auto operator()(D, V a) const {
        return hn::IsInf(a);
    }
};

// COND (cond, a, b) on 32-bit data, as bits: a where the bool cond is nonzero, else b.
HWY_INLINE void cond_select(const ElemwiseSrc* s, uint32_t* dst, size_t n) {
    const hn::ScalableTag<uint32_t> d;
    const hn::Rebind<uint8_t, decltype(d)> du8;
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        auto cond = hn::PromoteTo(d, load(du8, s[0], i));
        auto pick = hn::Eq(cond, hn::Zero(d));
        hn::StoreU(hn::IfThenElse(pick, load(d, s[2], i), load(d, s[1], i)), d, dst + i);
    }
    const auto at = [&](size_t k, size_t j) {
        const auto* p = static_cast<const uint32_t*>(s[k].p);
        return s[k].broadcast ? *p : p[j];
    };
    for (; i < n; ++i) {
        const auto* c = static_cast<const uint8_t*>(s[0].p);
        dst[i] = (s[0].broadcast ? *c : c[i]) ? at(1, i) : at(2, i);
    }
}

bool Cond32(Mode mode, const ElemwiseSrc* s, uint32_t* dst, size_t n) {
    if (mode != Mode::COND)
        return false;
    cond_select(s, dst, n);
    return true;
}

// Each returns false for a mode it does not compute.
bool ElemwiseI32(Mode mode, const ElemwiseSrc* s, int32_t* dst, size_t n) {
    switch (mode) {
        case Mode::ADD:
            return run_i32<2>(mode, s, dst, n, AddOp()), true;
        case Mode::SUB:
            return run_i32<2>(mode, s, dst, n, SubOp()), true;
        case Mode::MUL:
            return run_i32<2>(mode, s, dst, n, MulOp()), true;
        case Mode::MAX:
            return run_i32<2>(mode, s, dst, n, MaxOp()), true;
        case Mode::MIN:
            return run_i32<2>(mode, s, dst, n, MinOp()), true;
        case Mode::RELU:
            return run_i32<1>(mode, s, dst, n, Relu()), true;
        case Mode::ABS:
            return run_i32<1>(mode, s, dst, n, Abs()), true;
        case Mode::NEGATE:
            return run_i32<1>(mode, s, dst, n, Negate()), true;
        case Mode::SQUARE:
            return run_i32<1>(mode, s, dst, n, Square()), true;
        case Mode::ROUND:
        case Mode::FLOOR:
        case Mode::CEIL:
            return run_i32<1>(mode, s, dst, n, Identity()), true;
        case Mode::SIGN:
            return run_i32<1>(mode, s, dst, n, Sign()), true;
        case Mode::ABS_GRAD:
            return run_i32<2>(mode, s, dst, n, AbsGrad()), true;
        case Mode::SWITCH_GT0:
            return run_i32<2>(mode, s, dst, n, SwitchGt0()), true;
        case Mode::CLIP:
            return run_i32<3>(mode, s, dst, n, Clip()), true;
        case Mode::FUSE_MUL_ADD3:
            return run_i32<3>(mode, s, dst, n, FuseMulAdd3()), true;
        case Mode::FUSE_MUL_ADD4:
            return run_i32<4>(mode, s, dst, n, FuseMulAdd4()), true;
        case Mode::AND:
            return run_i32<2>(mode, s, dst, n, AndOp()), true;
        case Mode::OR:
            return run_i32<2>(mode, s, dst, n, OrOp()), true;
        case Mode::XOR:
            return run_i32<2>(mode, s, dst, n, XorOp()), true;
        case Mode::SHL:
            return run_i32<2>(mode, s, dst, n, Shl()), true;
        case Mode::SHR:
            return run_i32<2>(mode, s, dst, n, Shr()), true;
        default:
            return false;
    }
}

bool CompareF32(Mode mode, const ElemwiseSrc* s, uint8_t* dst, size_t n) {
    switch (mode) {
        case Mode::EQ:
            return run_to_bool<float, 2>(mode, s, dst, n, Eq()), true;
        case Mode::NE:
            return run_to_bool<float, 2>(mode, s, dst, n, Ne()), true;
        case Mode::LT:
            return run_to_bool<float, 2>(mode, s, dst, n, Lt()), true;
        case Mode::LEQ:
            return run_to_bool<float, 2>(mode, s, dst, n, LeqF()), true;
        case Mode::ISNAN:
            return run_to_bool<float, 1>(mode, s, dst, n, IsNan()), true;
        case Mode::ISINF:
            return run_to_bool<float, 1>(mode, s, dst, n, IsInf()), true;
        default:
            return false;
    }
}

bool CompareI32(Mode mode, const ElemwiseSrc* s, uint8_t* dst, size_t n) {
    switch (mode) {
        case Mode::EQ:
            return run_to_bool<int32_t, 2>(mode, s, dst, n, Eq()), true;
        case Mode::NE:
            return run_to_bool<int32_t, 2>(mode, s, dst, n, Ne()), true;
        case Mode::LT:
            return run_to_bool<int32_t, 2>(mode, s, dst, n, Lt()), true;
        case Mode::LEQ:
            return run_to_bool<int32_t, 2>(mode, s, dst, n, Leq()), true;
        default:
            return false;
    }
}

bool BoolOp(Mode mode, const ElemwiseSrc* s, uint8_t* dst, size_t n) {
    switch (mode) {
        case Mode::AND:
            return run_bool<2>(mode, s, dst, n, AndOp()), true;
        case Mode::OR:
            return run_bool<2>(mode, s, dst, n, OrOp()), true;
        case Mode::XOR:
            return run_bool<2>(mode, s, dst, n, XorOp()), true;
        case Mode::NOT:
            return run_bool<1>(mode, s, dst, n, Not()), true;
        default:
            return false;
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ElemwiseI32);
HWY_EXPORT(CompareF32);
HWY_EXPORT(CompareI32);
HWY_EXPORT(BoolOp);
HWY_EXPORT(Cond32);

bool elemwise_int_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                      void* dst, size_t n) {
    // COND copies a's or b's bits, the same for float32 and int32.
    if (mode == elemwise::Mode::COND)
        return (data == dtype::Float32 || data == dtype::Int32) && dst_dtype == data &&
               HWY_DYNAMIC_DISPATCH(Cond32)(mode, srcs, static_cast<uint32_t*>(dst), n);
    if (data == dtype::Int32 && dst_dtype == dtype::Int32)
        return HWY_DYNAMIC_DISPATCH(ElemwiseI32)(mode, srcs, static_cast<int32_t*>(dst), n);
    // QuantizedS32 (a quantized Linear's bias addition) computes on its int32 storage, wrapping as
    // int32 does; the layout rule admits only the modes exact on the integers of one scale.
    if (data.is_quantized() && data.storage() == dtype::Int32 && dst_dtype == data &&
        param::Elemwise::quantized(mode))
        return HWY_DYNAMIC_DISPATCH(ElemwiseI32)(mode, srcs, static_cast<int32_t*>(dst), n);
    if (dst_dtype != dtype::Bool)
        return false;
    auto* out = static_cast<uint8_t*>(dst);
    if (data == dtype::Float32)
        return HWY_DYNAMIC_DISPATCH(CompareF32)(mode, srcs, out, n);
    if (data == dtype::Int32)
        return HWY_DYNAMIC_DISPATCH(CompareI32)(mode, srcs, out, n);
    if (data == dtype::Bool)
        return HWY_DYNAMIC_DISPATCH(BoolOp)(mode, srcs, out, n);
    return false;
}

}  // namespace neomeg::dnn::x86
#endif
