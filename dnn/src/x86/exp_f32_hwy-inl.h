// exp in float32 vectors, shared by the elementwise EXP (elemwise_math_hwy.cpp) and softmax
// (softmax_hwy.cpp). Included once per target like Highway's own -inl headers (the guard flips
// with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_EXP_F32_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_EXP_F32_HWY_INL_H_
#undef NEOMEG_X86_EXP_F32_HWY_INL_H_
#else
#define NEOMEG_X86_EXP_F32_HWY_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// P of exp(r) = 1 + r + r^2 P(r) for |r| <= ln 2 / 2 (Highway's float Exp's polynomial), by Horner.
template <class D, class V>
HWY_INLINE V exp_f32_poly(D d, V r) {
    V p = hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                     hn::Set(d, 0.00139304355252534151077271f));
    p = hn::MulAdd(p, r, hn::Set(d, 0.00833336077630519866943359f));
    p = hn::MulAdd(p, r, hn::Set(d, 0.0416664853692054748535156f));
    p = hn::MulAdd(p, r, hn::Set(d, 0.166666671633720397949219f));
    return hn::MulAdd(p, r, hn::Set(d, 0.5f));
}

// exp in float on [-87, 88], where the result is a normal float or overflows; outside (subnormal
// results, NaN) the caller takes the scalar formula for the lanes special() marks. The steps and
// constants are Highway's float Exp (its ln 2 split, its polynomial, within 1 ULP), less what only
// the lanes outside this range need: its overflow-safe float-to-int conversion, its scaling by 2^n
// in two halves (for subnormal results) and its clamp. n is rounded by adding 1.5 * 2^23 (plus
// the exponent's bias), whose low bits then hold it, and 2^n is built from those bits; the
// polynomial runs by Horner (Estrin's extra products did not pay). AVX2's 8-lane exp was
// compute-bound at 0.40x the STREAM triad: 14.5 -> 8.7 cycles per vector, every float of [-87, 88]
// still within 1 ULP of the correctly rounded exp (docs/x86-backend-log.md, "On an AVX2-only
// CPU"). With kLow, exp(x + lo) for
// a small lo (|lo| below 2^-16) added to the reduced argument: a caller whose argument is a float
// pair (GELU's -x^2 / 2 and its rounding error) keeps the pair's precision for one addition.
template <bool kLow, class D, class V>
HWY_INLINE V exp_f32(D d, V x, V lo) {
    const hn::RebindToSigned<D> di;
    // 1.5 * 2^23 + 127: t's low bits hold 127 + n, 2^n's biased exponent.
    const V magic = hn::Set(d, 12583039.0f);
    const V t = hn::MulAdd(x, hn::Set(d, 1.442695040888963407359924681f), magic);
    const V n = hn::Sub(t, magic);
    V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), x);
    r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
    if constexpr (kLow)
        r = hn::Add(r, lo);
    const V q = hn::MulAdd(exp_f32_poly(d, r), hn::Mul(r, r), r);  // exp(r) - 1
    // t's bits are 0x4B400000 + 127 + n; shifted by 23 the offset's bits leave the word (the
    // bias in the magic saves an integer add).
    const auto pow2n = hn::ShiftLeft<23>(hn::BitCast(di, t));
    // (q + 1) 2^n as one FMA, q 2^n + 2^n: one rounding of the same value (scaling by 2^n is
    // exact for normal results), so the same bits as rounding q + 1 and scaling, in one
    // operation less.
    const V p2n = hn::BitCast(d, pow2n);
    return hn::MulAdd(q, p2n, p2n);
}

// exp_f32 with the lanes outside its range marked for run_float_special.
struct ExpF {
    template <class D, class V>
    V operator()(D d, V x) const {
        return exp_f32<false>(d, x, x);
    }
    template <class D, class V>
    auto special(D d, const V* x) const {
        return hn::Not(hn::And(hn::Ge(x[0], hn::Set(d, -87.0f)), hn::Le(x[0], hn::Set(d, 88.0f))));
    }
};

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NEOMEG_X86_EXP_F32_HWY_INL_H_
