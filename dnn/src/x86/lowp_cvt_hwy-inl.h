// The float16 and bfloat16 conversions of TypeCvt (type_cvt_hwy.cpp), shared with the 16-bit
// Elemwise kernels (elemwise_lowp_hwy.cpp): Eigen's scalar algorithms (what naive runs) written
// on int32 lanes, so every target gives naive's bits. Included once per target, after highway.h,
// like Highway's own -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_LOWP_CVT_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_LOWP_CVT_HWY_INL_H_
#undef NEOMEG_X86_LOWP_CVT_HWY_INL_H_
#else
#define NEOMEG_X86_LOWP_CVT_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Each helper takes any int32 tag (full vectors, or the half-width ones beside double lanes).
template <class D>
using VecI = hn::Vec<D>;
template <class D>
using VecF = hn::Vec<hn::RebindToFloat<D>>;

// Eigen's float_to_half_rtne: the float16 bits of f (in int32 lanes), rounded to nearest even;
// NaN gives 0x7e00 and the sign.
template <class D>
HWY_INLINE VecI<D> f16_bits(D di, VecF<D> f) {
    using VI = VecI<D>;
    const hn::RebindToFloat<D> df;
    VI u = hn::BitCast(di, f);
    VI a = hn::And(u, hn::Set(di, 0x7fffffff));
    // Normal results: rebias the exponent and round the 13 dropped bits to even.
    VI odd = hn::And(hn::ShiftRight<13>(a), hn::Set(di, 1));
    VI normal = hn::ShiftRight<13>(
            hn::Add(hn::Add(a, hn::Set(di, static_cast<int32_t>(0xc8000fffu))), odd));
    // Subnormal results: adding 0.5f aligns the 10 mantissa bits at the bottom, rounded by the FPU.
    const int32_t magic = 126 << 23;
    VI sub = hn::Sub(
            hn::BitCast(di, hn::Add(hn::BitCast(df, a), hn::BitCast(df, hn::Set(di, magic)))),
            hn::Set(di, magic));
    VI inf_nan = hn::IfThenElse(hn::Gt(a, hn::Set(di, 0x7f800000)), hn::Set(di, 0x7e00),
                                hn::Set(di, 0x7c00));
    VI r = hn::IfThenElse(hn::Lt(a, hn::Set(di, 113 << 23)), sub, normal);
    r = hn::IfThenElse(hn::Gt(a, hn::Set(di, ((127 + 16) << 23) - 1)), inf_nan, r);
    return hn::Or(r, hn::IfThenElseZero(hn::Lt(u, hn::Zero(di)), hn::Set(di, 0x8000)));
}

// Eigen's float_to_bfloat16_rtne: round to nearest even by adding 0x7fff plus the kept lsb; NaN
// gives 0x7fc0 and the sign.
template <class D>
HWY_INLINE VecI<D> bf16_bits(D di, VecF<D> f) {
    using VI = VecI<D>;
    const hn::RebindToUnsigned<D> du;
    auto u = hn::BitCast(du, f);
    auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    VI r = hn::BitCast(di, hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7fffu)), lsb)));
    VI nan = hn::IfThenElse(hn::Lt(hn::BitCast(di, f), hn::Zero(di)), hn::Set(di, 0xffc0),
                            hn::Set(di, 0x7fc0));
    return hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(f)), nan, r);
}

// NaNs made quiet, keeping their payload: naive widens every float to double on the way, which
// sets a signalling NaN's quiet bit.
template <class V>
HWY_INLINE V quiet(V f) {
    const hn::DFromV<V> df;
    const hn::RebindToSigned<decltype(df)> di;
    V q = hn::BitCast(df, hn::Or(hn::BitCast(di, f), hn::Set(di, 0x00400000)));
    return hn::IfThenElse(hn::IsNaN(f), q, f);
}

// Eigen's half_to_float (exact), NaNs made quiet: h holds the float16 bits in int32 lanes.
template <class D>
HWY_INLINE VecF<D> f32_from_f16(D di, VecI<D> h) {
    using VI = VecI<D>;
    const hn::RebindToFloat<D> df;
    const int32_t shifted_exp = 0x7c00 << 13;
    VI o = hn::ShiftLeft<13>(hn::And(h, hn::Set(di, 0x7fff)));
    VI exp = hn::And(o, hn::Set(di, shifted_exp));
    o = hn::Add(o, hn::Set(di, (127 - 15) << 23));
    // Infinities and NaNs take the largest exponent; zeros and subnormals renormalise in float.
    VI inf_nan = hn::Add(o, hn::Set(di, (128 - 16) << 23));
    const int32_t magic = 113 << 23;
    VI small = hn::BitCast(di, hn::Sub(hn::BitCast(df, hn::Add(o, hn::Set(di, 1 << 23))),
                                       hn::BitCast(df, hn::Set(di, magic))));
    o = hn::IfThenElse(hn::Eq(exp, hn::Set(di, shifted_exp)), inf_nan, o);
    o = hn::IfThenElse(hn::Eq(exp, hn::Zero(di)), small, o);
    return quiet(hn::BitCast(df, hn::Or(o, hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000))))));
}

template <class D>
HWY_INLINE VecF<D> f32_from_bf16(D, VecI<D> h) {
    return quiet(hn::BitCast(hn::RebindToFloat<D>(), hn::ShiftLeft<16>(h)));
}

// Lanes of 16-bit or 8-bit values widened into int32 lanes, and back.
template <class T, class D>
HWY_INLINE VecI<D> load_narrow(D di, const T* p) {
    return hn::PromoteTo(di, hn::LoadU(hn::Rebind<T, D>(), p));
}
template <class T, class D>
HWY_INLINE void store_narrow(D, VecI<D> v, T* p) {
    const hn::Rebind<T, D> dn;
    hn::StoreU(hn::DemoteTo(dn, v), dn, p);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
