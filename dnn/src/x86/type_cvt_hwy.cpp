// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. The float16 and
// bfloat16 conversions give naive's bits (Eigen's scalar algorithms) on every target: bfloat16 and
// the targets without F16C run those algorithms on int32 lanes (lowp_cvt_hwy-inl.h); float16 on
// AVX2 and AVX-512 uses F16C's instructions with NaNs made Eigen's first (f16_from_f32 below),
// about 3x faster than the int32 algorithm.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/type_cvt_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/lowp_cvt_hwy-inl.h"
// clang-format on

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "src/x86/type_cvt_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;
using DF = hn::RebindToFloat<DI>;
using VI = hn::Vec<DI>;
using VF = hn::Vec<DF>;

// C's truncation, saturated at int32's ends, NaN -> 0. Highway's ConvertTo already saturates on
// every target (x86 fixes cvttps2dq's 0x80000000 by the input's sign; the emulation and scalar
// clamp), so only NaN, which it sends to an end, needs a blend: two more range blends cost
// float32 -> int32 a tenth of its time at one thread (the functional audit's `astype int32`).
HWY_INLINE VI i32_from_f32(DI di, VF f) {
    return hn::IfThenZeroElse(hn::RebindMask(di, hn::IsNaN(f)), hn::ConvertTo(di, f));
}

// Converts n elements a vector (of int32's lane count) at a time; the tail goes through a
// zero-padded vector-sized buffer, so it takes exactly the same arithmetic.
template <class TS, class TD, class F>
HWY_INLINE void run(const void* src, void* dst, size_t n, const F& f) {
    const DI di;
    const size_t lanes = hn::Lanes(di);
    const auto* s = static_cast<const TS*>(src);
    auto* d = static_cast<TD*>(dst);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        f(di, s + i, d + i);
    if (i < n) {
        constexpr size_t kMaxLanes = 64;  // more than any x86 vector's int32 lanes
        TS in[kMaxLanes] = {};
        TD out[kMaxLanes];
        std::memcpy(in, s + i, (n - i) * sizeof(TS));
        f(di, in, out);
        std::memcpy(d + i, out, (n - i) * sizeof(TD));
    }
}

// Every pair goes through one of two exact lane forms: float sources (float32, float16, bfloat16)
// load as float32 lanes, integer and bool sources as int32 lanes; a destination then stores
// either form with naive's rounding, saturation or wrap. A source kind is a tag naming its
// storage type (float16 and bfloat16 are both 16-bit words).
struct F32 {
    using T = float;
    static VF load(DI, const T* p) { return hn::LoadU(DF(), p); }
};
struct F16 {
    using T = uint16_t;
};
struct BF16 {
    using T = uint16_t;
    static VF load(DI di, const T* p) { return f32_from_bf16(di, load_narrow(di, p)); }
};
template <class I>
struct Int {  // int32, int16, int8, uint8, and bool (0 or 1 in a byte)
    using T = I;
    static VI load(DI di, const T* p) {
        if constexpr (sizeof(I) == 4)
            return hn::LoadU(di, p);
        else
            return load_narrow(di, p);
    }
};

#if HWY_TARGET <= HWY_AVX2
// F16C's conversions (vcvtps2ph, vcvtph2ps), a few instructions where Eigen's algorithm takes a
// dozen: float32 -> float16 rounds to nearest even as Eigen does and differs only at NaN, where
// F16C keeps the payload's top bits and Eigen gives 0x7e00 and the sign, so NaNs are first made
// the float NaN that converts to exactly that. float16 -> float32 is exact in both; quiet()
// then does what naive's widening does.
HWY_INLINE void store_f16(DI di, VF f, uint16_t* out) {
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    VF nan = hn::BitCast(df, hn::Or(hn::And(hn::BitCast(di, f), hn::Set(di, INT32_MIN)),
                                    hn::Set(di, 0x7fc00000)));
    f = hn::IfThenElse(hn::IsNaN(f), nan, f);
    hn::StoreU(hn::DemoteTo(dh, f), dh, reinterpret_cast<hwy::float16_t*>(out));
}

HWY_INLINE VF load_f16(DI, const uint16_t* in) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return quiet(hn::PromoteTo(DF(), hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(in))));
}
#else
HWY_INLINE void store_f16(DI di, VF f, uint16_t* out) {
    store_narrow(di, f16_bits(di, f), out);
}

HWY_INLINE VF load_f16(DI di, const uint16_t* in) {
    return f32_from_f16(di, load_narrow(di, in));
}
#endif

// The float32 value of int32 lanes, rounded to nearest even (as static_cast<float>).
HWY_INLINE VF f32_of(DI, VI v) {
    return hn::ConvertTo(DF(), v);
}

// An int32 value as a float that rounds to bfloat16 as x itself does (naive rounds an integer to
// float32 by round-to-odd, then to bfloat16, which is one correct rounding). Below 2^24 the
// float32 is exact. From 2^24 on, bfloat16's round bit sits at bit 16 of |x| or higher, so bits
// 0-15 only say whether anything lies below it: they are replaced by one bit at position 8, and
// what is left fits float32's 24 bits (|x| <= 2^31 keeps bits 8 and up) and converts exactly.
HWY_INLINE VF bf16_exact_f32_of(DI di, VI x) {
    const DF df;
    VI a = hn::Abs(x);  // INT32_MIN stays itself; its float's magnitude, 2^31, is still right
    auto exact = hn::And(hn::Gt(a, hn::Set(di, -1)), hn::Lt(a, hn::Set(di, 1 << 24)));
    VI low = hn::And(a, hn::Set(di, 0xffff));
    VI folded = hn::Or(hn::And(a, hn::Set(di, static_cast<int32_t>(0xffff0000u))),
                       hn::IfThenZeroElse(hn::Eq(low, hn::Zero(di)), hn::Set(di, 0x100)));
    VF mag = hn::Abs(hn::ConvertTo(df, hn::IfThenElse(exact, a, folded)));
    return hn::CopySign(mag, hn::BitCast(df, x));
}

// A destination kind: how float32 lanes and int32 lanes are stored into it.
struct ToF32 {
    using T = float;
    static void store(DI, VF f, T* p) { hn::StoreU(quiet(f), DF(), p); }
    static void store(DI di, VI v, T* p) { hn::StoreU(f32_of(di, v), DF(), p); }
};
struct ToF16 {
    using T = uint16_t;
    static void store(DI di, VF f, T* p) { store_f16(di, f, p); }
    // Exact: below 2^24 the float32 is the integer itself; above, both round past float16's
    // largest finite value (65504) to infinity.
    static void store(DI di, VI v, T* p) { store_f16(di, f32_of(di, v), p); }
};
struct ToBF16 {
    using T = uint16_t;
    static void store(DI di, VF f, T* p) { store_narrow(di, bf16_bits(di, f), p); }
    static void store(DI di, VI v, T* p) { store(di, bf16_exact_f32_of(di, v), p); }
};
// Integers: a float truncates toward zero and saturates at the dtype's ends (NaN -> 0); an
// integer keeps its low bits (two's complement wrap, as static_cast).
template <class I>
struct ToInt {
    using T = I;
    static void store(DI di, VF f, T* p) {
        VI v = i32_from_f32(di, f);
        if constexpr (sizeof(I) == 4) {
            hn::StoreU(v, di, p);
        } else {
            // Clamped first: Highway's narrowing DemoteTo does not saturate on every target.
            using L = std::numeric_limits<I>;
            v = hn::Min(hn::Max(v, hn::Set(di, int32_t{L::min()})), hn::Set(di, int32_t{L::max()}));
            store_narrow(di, v, p);
        }
    }
    static void store(DI di, VI v, T* p) {
        if constexpr (sizeof(I) == 4) {
            hn::StoreU(v, di, p);
        } else {
            // The low bits, sign- or zero-extended, are in the narrow range, which DemoteTo keeps.
            constexpr int kShift = 32 - 8 * static_cast<int>(sizeof(I));
            v = std::is_signed_v<I> ? hn::ShiftRight<kShift>(hn::ShiftLeft<kShift>(v))
                                    : hn::And(v, hn::Set(di, (1 << (8 * sizeof(I))) - 1));
            store_narrow(di, v, p);
        }
    }
};
struct ToBool {
    using T = uint8_t;
    // != 0, so NaN -> true.
    static void store(DI di, VF f, T* p) {
        auto z = hn::RebindMask(di, hn::Eq(f, hn::Zero(DF())));
        store_narrow(di, hn::IfThenZeroElse(z, hn::Set(di, 1)), p);
    }
    static void store(DI di, VI v, T* p) {
        store_narrow(di, hn::IfThenZeroElse(hn::Eq(v, hn::Zero(di)), hn::Set(di, 1)), p);
    }
};

template <class S>
HWY_INLINE auto load(DI di, const typename S::T* p) {
    if constexpr (std::is_same_v<S, F16>)
        return load_f16(di, p);
    else
        return S::load(di, p);
}

// Calls f with the source tag of a dtype; false for a dtype without one.
template <class F>
bool with_source(DTypeEnum e, const F& f) {
    using E = DTypeEnum;
    switch (e) {
        case E::Float32:
            return f(F32{}), true;
        case E::Float16:
            return f(F16{}), true;
        case E::BFloat16:
            return f(BF16{}), true;
        case E::Int32:
            return f(Int<int32_t>{}), true;
        case E::Int16:
            return f(Int<int16_t>{}), true;
        case E::Int8:
            return f(Int<int8_t>{}), true;
        case E::Uint8:
        case E::Bool:
            return f(Int<uint8_t>{}), true;
        default:
            return false;
    }
}

template <class F>
bool with_destination(DTypeEnum e, const F& f) {
    using E = DTypeEnum;
    switch (e) {
        case E::Float32:
            return f(ToF32{}), true;
        case E::Float16:
            return f(ToF16{}), true;
        case E::BFloat16:
            return f(ToBF16{}), true;
        case E::Int32:
            return f(ToInt<int32_t>{}), true;
        case E::Int16:
            return f(ToInt<int16_t>{}), true;
        case E::Int8:
            return f(ToInt<int8_t>{}), true;
        case E::Uint8:
            return f(ToInt<uint8_t>{}), true;
        case E::Bool:
            return f(ToBool{}), true;
        default:
            return false;
    }
}

bool Convert(DTypeEnum src, DTypeEnum dst, const void* s, void* d, size_t n) {
    bool known = false;
    with_source(src, [&](auto from) {
        using S = decltype(from);
        known = with_destination(dst, [&](auto to) {
            using D = decltype(to);
            run<typename S::T, typename D::T>(
                    s, d, n, [](DI di, const typename S::T* in, typename D::T* out) {
                        D::store(di, load<S>(di, in), out);
                    });
        });
    });
    return known;
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Convert);

bool type_cvt_supported(DType src, DType dst) {
    // An empty run touches no memory: this asks the pair switch itself.
    return HWY_DYNAMIC_DISPATCH(Convert)(src.enumv(), dst.enumv(), nullptr, nullptr, 0);
}

void type_cvt_run(DType src, DType dst, const void* s, void* d, size_t n) {
    (void)HWY_DYNAMIC_DISPATCH(Convert)(src.enumv(), dst.enumv(), s, d, n);
}

}  // namespace neomeg::dnn::x86
#endif
