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

#include "src/x86/type_cvt_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;
using DF = hn::RebindToFloat<DI>;
using VI = hn::Vec<DI>;
using VF = hn::Vec<DF>;

// C's truncation, saturated at int32's ends, NaN -> 0.
HWY_INLINE VI i32_from_f32(DI di, VF f) {
    const DF df;
    VI r = hn::ConvertTo(di, f);
    r = hn::IfThenElse(hn::RebindMask(di, hn::Ge(f, hn::Set(df, 2147483648.0f))),
                       hn::Set(di, INT32_MAX), r);
    r = hn::IfThenElse(hn::RebindMask(di, hn::Le(f, hn::Set(df, -2147483648.0f))),
                       hn::Set(di, INT32_MIN), r);
    return hn::IfThenZeroElse(hn::RebindMask(di, hn::IsNaN(f)), r);
}

#if HWY_TARGET <= HWY_AVX2
// F16C's conversions (vcvtps2ph, vcvtph2ps), a few instructions where Eigen's algorithm takes a
// dozen: float32 -> float16 rounds to nearest even as Eigen does and differs only at NaN, where
// F16C keeps the payload's top bits and Eigen gives 0x7e00 and the sign, so NaNs are first made
// the float NaN that converts to exactly that. float16 -> float32 is exact in both; quiet()
// then does what naive's widening does.
HWY_INLINE void f16_from_f32(const float* in, uint16_t* out) {
    const DF df;
    const DI di;
    const hn::Rebind<hwy::float16_t, DF> dh;
    VF f = hn::LoadU(df, in);
    VF nan = hn::BitCast(df, hn::Or(hn::And(hn::BitCast(di, f), hn::Set(di, INT32_MIN)),
                                    hn::Set(di, 0x7fc00000)));
    f = hn::IfThenElse(hn::IsNaN(f), nan, f);
    hn::StoreU(hn::DemoteTo(dh, f), dh, reinterpret_cast<hwy::float16_t*>(out));
}

HWY_INLINE void f32_from_f16(const uint16_t* in, float* out) {
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* h = reinterpret_cast<const hwy::float16_t*>(in);
    hn::StoreU(quiet(hn::PromoteTo(df, hn::LoadU(dh, h))), df, out);
}
#else
HWY_INLINE void f16_from_f32(const float* in, uint16_t* out) {
    const DI di;
    store_narrow(di, f16_bits(di, hn::LoadU(DF(), in)), out);
}

HWY_INLINE void f32_from_f16(const uint16_t* in, float* out) {
    const DI di;
    hn::StoreU(f32_from_f16(di, load_narrow(di, in)), DF(), out);
}
#endif

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

// float32 from a lane type T the vector converts exactly (8- and 16-bit integers, bool as 0/1).
template <class T>
HWY_INLINE void small_int_to_f32(const void* s, void* d, size_t n) {
    run<T, float>(s, d, n, [](DI di, const T* in, float* out) {
        hn::StoreU(hn::ConvertTo(DF(), load_narrow(di, in)), DF(), out);
    });
}

bool Convert(DTypeEnum src, DTypeEnum dst, const void* s, void* d, size_t n) {
    using E = DTypeEnum;
    const DF df;
    if (src == E::Float32) {
        switch (dst) {
            case E::Float16:
                return run<float, uint16_t>(
                               s, d, n,
                               [](DI, const float* in, uint16_t* out) { f16_from_f32(in, out); }),
                       true;
            case E::BFloat16:
                return run<float, uint16_t>(s, d, n,
                                            [&](DI di, const float* in, uint16_t* out) {
                                                store_narrow(di, bf16_bits(di, hn::LoadU(df, in)),
                                                             out);
                                            }),
                       true;
            case E::Float32:
                return run<float, float>(s, d, n,
                                         [&](DI, const float* in, float* out) {
                                             hn::StoreU(quiet(hn::LoadU(df, in)), df, out);
                                         }),
                       true;
            case E::Int32:
                return run<float, int32_t>(s, d, n,
                                           [&](DI di, const float* in, int32_t* out) {
                                               hn::StoreU(i32_from_f32(di, hn::LoadU(df, in)), di,
                                                          out);
                                           }),
                       true;
            case E::Bool:
                // != 0, so NaN -> true.
                return run<float, uint8_t>(s, d, n,
                                           [&](DI di, const float* in, uint8_t* out) {
                                               auto z = hn::Eq(hn::LoadU(df, in), hn::Zero(df));
                                               VI v = hn::IfThenZeroElse(hn::RebindMask(di, z),
                                                                         hn::Set(di, 1));
                                               store_narrow(di, v, out);
                                           }),
                       true;
            default:
                return false;
        }
    }
    if (dst == E::Float32) {
        switch (src) {
            case E::Float16:
                return run<uint16_t, float>(
                               s, d, n,
                               [](DI, const uint16_t* in, float* out) { f32_from_f16(in, out); }),
                       true;
            case E::BFloat16:
                return run<uint16_t, float>(s, d, n,
                                            [&](DI di, const uint16_t* in, float* out) {
                                                hn::StoreU(f32_from_bf16(di, load_narrow(di, in)),
                                                           df, out);
                                            }),
                       true;
            case E::Int32:
                // Rounds to nearest even, as a scalar int -> float conversion does.
                return run<int32_t, float>(s, d, n,
                                           [&](DI di, const int32_t* in, float* out) {
                                               hn::StoreU(hn::ConvertTo(df, hn::LoadU(di, in)), df,
                                                          out);
                                           }),
                       true;
            case E::Int16:
                return small_int_to_f32<int16_t>(s, d, n), true;
            case E::Int8:
                return small_int_to_f32<int8_t>(s, d, n), true;
            case E::Uint8:
            case E::Bool:
                return small_int_to_f32<uint8_t>(s, d, n), true;
            default:
                return false;
        }
    }
    // float16 <-> bfloat16 through float32, which holds either exactly; float16 -> float16 too,
    // since naive's round trip makes every NaN Eigen's one NaN.
    if (src == E::Float16 && dst == E::Float16)
        return run<uint16_t, uint16_t>(s, d, n,
                                       [](DI di, const uint16_t* in, uint16_t* out) {
                                           VF f = f32_from_f16(di, load_narrow(di, in));
                                           store_narrow(di, f16_bits(di, f), out);
                                       }),
               true;
    if (src == E::BFloat16 && dst == E::BFloat16)
        return run<uint16_t, uint16_t>(s, d, n,
                                       [](DI di, const uint16_t* in, uint16_t* out) {
                                           VF f = f32_from_bf16(di, load_narrow(di, in));
                                           store_narrow(di, bf16_bits(di, f), out);
                                       }),
               true;
    if (src == E::Float16 && dst == E::BFloat16)
        return run<uint16_t, uint16_t>(s, d, n,
                                       [](DI di, const uint16_t* in, uint16_t* out) {
                                           VF f = f32_from_f16(di, load_narrow(di, in));
                                           store_narrow(di, bf16_bits(di, f), out);
                                       }),
               true;
    if (src == E::BFloat16 && dst == E::Float16)
        return run<uint16_t, uint16_t>(s, d, n,
                                       [](DI di, const uint16_t* in, uint16_t* out) {
                                           VF f = f32_from_bf16(di, load_narrow(di, in));
                                           store_narrow(di, f16_bits(di, f), out);
                                       }),
               true;
    return false;
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
