// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/elemwise_lowp_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/lowp_cvt_hwy-inl.h"
// clang-format on

#include <cstdint>
#include <cstring>

#include "src/x86/elemwise_lowp_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;
using DF = hn::RebindToFloat<DI>;
using VI = hn::Vec<DI>;
using VF = hn::Vec<DF>;
using Mode = elemwise::Mode;

// The float32 kernels' formulas (elemwise_hwy.cpp), each one IEEE operation or a selection.
struct AddOp {
    VF operator()(VF a, VF b) const { return hn::Add(a, b); }
};
struct SubOp {
    VF operator()(VF a, VF b) const { return hn::Sub(a, b); }
};
struct MulOp {
    VF operator()(VF a, VF b) const { return hn::Mul(a, b); }
};
// std::max/std::min's choice (the first operand on ties), NaN if either is.
struct MaxOp {
    VF operator()(VF a, VF b) const {
        VF r = hn::IfThenElse(hn::Lt(a, b), b, a);
        return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
    }
};
struct MinOp {
    VF operator()(VF a, VF b) const {
        VF r = hn::IfThenElse(hn::Lt(b, a), b, a);
        return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
    }
};
// (x, dy): dy where x > 0, else 0.
struct SwitchGt0 {
    VF operator()(VF x, VF dy) const { return hn::IfThenElseZero(hn::Gt(x, hn::Zero(DF())), dy); }
};
struct Relu {
    VF operator()(VF a) const { return hn::IfThenElseZero(hn::Gt(a, hn::Zero(DF())), a); }
};
struct Negate {
    VF operator()(VF a) const { return hn::Neg(a); }
};
struct Abs {
    VF operator()(VF a) const { return hn::Abs(a); }
};

// One operand: its 16-bit bits at element i in int32 lanes (one value for every lane if broadcast).
HWY_INLINE VI bits_at(DI di, const ElemwiseSrc& s, size_t i) {
    const auto* p = static_cast<const uint16_t*>(s.p);
    return s.broadcast ? hn::Set(di, static_cast<int32_t>(*p)) : load_narrow(di, p + i);
}

template <bool kBf16>
HWY_INLINE VF widen(DI di, VI h) {
    if constexpr (kBf16)
        return hn::BitCast(DF(), hn::ShiftLeft<16>(h));
    else
        return f32_from_f16(di, h);
}

template <bool kBf16>
HWY_INLINE VI narrow(DI di, VF f) {
    if constexpr (kBf16)
        return bf16_bits(di, f);
    else
        return f16_bits(di, f);
}

// Whole vectors straight from the operands; the tail through zero-padded vector-sized buffers, so
// it takes the same arithmetic.
template <bool kBf16, size_t kArity, class F>
HWY_INLINE void run(const ElemwiseSrc* s, uint16_t* dst, size_t n, const F& f) {
    const DI di;
    const size_t lanes = hn::Lanes(di);
    auto one = [&](const ElemwiseSrc* src, size_t i, uint16_t* out) {
        VF x[kArity];
        for (size_t k = 0; k < kArity; ++k)
            x[k] = widen<kBf16>(di, bits_at(di, src[k], i));
        VF r;
        if constexpr (kArity == 1)
            r = f(x[0]);
        else
            r = f(x[0], x[1]);
        store_narrow(di, narrow<kBf16>(di, r), out);
    };
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        one(s, i, dst + i);
    if (i < n) {
        constexpr size_t kMaxLanes = 64;  // more than any x86 vector's int32 lanes
        uint16_t in[kArity][kMaxLanes] = {};
        uint16_t out[kMaxLanes];
        ElemwiseSrc tail[kArity];
        for (size_t k = 0; k < kArity; ++k) {
            if (s[k].broadcast) {
                tail[k] = s[k];
                continue;
            }
            std::memcpy(in[k], static_cast<const uint16_t*>(s[k].p) + i,
                        (n - i) * sizeof(uint16_t));
            tail[k] = {in[k], false};
        }
        one(tail, 0, out);
        std::memcpy(dst + i, out, (n - i) * sizeof(uint16_t));
    }
}

template <bool kBf16>
HWY_INLINE bool dispatch(Mode mode, const ElemwiseSrc* s, uint16_t* d, size_t n) {
    switch (mode) {
        case Mode::ADD:
            return run<kBf16, 2>(s, d, n, AddOp()), true;
        case Mode::SUB:
            return run<kBf16, 2>(s, d, n, SubOp()), true;
        case Mode::MUL:
            return run<kBf16, 2>(s, d, n, MulOp()), true;
        case Mode::MAX:
            return run<kBf16, 2>(s, d, n, MaxOp()), true;
        case Mode::MIN:
            return run<kBf16, 2>(s, d, n, MinOp()), true;
        case Mode::SWITCH_GT0:
            return run<kBf16, 2>(s, d, n, SwitchGt0()), true;
        case Mode::RELU:
            return run<kBf16, 1>(s, d, n, Relu()), true;
        case Mode::NEGATE:
            return run<kBf16, 1>(s, d, n, Negate()), true;
        case Mode::ABS:
            return run<kBf16, 1>(s, d, n, Abs()), true;
        default:
            return false;
    }
}

bool ElemwiseLowp(Mode mode, bool bf16, const ElemwiseSrc* s, uint16_t* d, size_t n) {
    return bf16 ? dispatch<true>(mode, s, d, n) : dispatch<false>(mode, s, d, n);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ElemwiseLowp);

bool elemwise_lowp_fused(elemwise::Mode mode, DType dt, const ElemwiseSrc* srcs, void* dst,
                         size_t n) {
    return HWY_DYNAMIC_DISPATCH(ElemwiseLowp)(mode, dt == dtype::BFloat16, srcs,
                                              static_cast<uint16_t*>(dst), n);
}

}  // namespace neomeg::dnn::x86
#endif
