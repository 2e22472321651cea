// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/lstm_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/sigmoid_tanh_f32_hwy-inl.h"
// clang-format on

#include <algorithm>

#include "src/x86/lstm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// n <= Lanes(d) floats at p as a vector (zeros past them): a row's last, partial vector goes
// through a buffer, since a masked load reads the whole vector on the emulated targets.
HWY_INLINE V load_part(D d, const float* p, size_t n) {
    if (n == hn::Lanes(d))
        return hn::LoadU(d, p);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy_n(p, n, buf);
    return hn::Load(d, buf);
}

HWY_INLINE void store_part(D d, V v, float* p, size_t n) {
    if (n == hn::Lanes(d))
        return hn::StoreU(v, d, p);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(v, d, buf);
    std::copy_n(buf, n, p);
}

// The activation with NaN put back (the float formulas turn it into a number).
HWY_INLINE V keep_nan(V x, V y) {
    return hn::IfThenElse(hn::IsNaN(x), x, y);
}

void StepForward(const LstmStepForward& s) {
    const D d;
    const size_t hs = s.hs, lanes = hn::Lanes(d);
    for (size_t r = 0; r < s.rows; ++r) {
        float* res = s.res + r * 7 * hs;
        for (size_t j = 0; j < hs; j += lanes) {
            const size_t n = std::min(lanes, hs - j);
            V a[4];
            for (size_t q = 0; q < 4; ++q) {
                a[q] = load_part(d, res + q * hs + j, n);
                if (s.bias)
                    a[q] = hn::Add(a[q], load_part(d, s.bias + q * hs + j, n));
            }
            const V i = keep_nan(a[0], sigmoid_f32(d, a[0]));
            const V f = keep_nan(a[1], sigmoid_f32(d, a[1]));
            const V g = keep_nan(a[2], tanh_f32(d, a[2]));
            const V o = keep_nan(a[3], sigmoid_f32(d, a[3]));
            const V c = hn::MulAdd(f, load_part(d, res + 5 * hs + j, n), hn::Mul(i, g));
            const V tc = keep_nan(c, tanh_f32(d, c));
            const V h = hn::Mul(o, tc);
            store_part(d, i, res + j, n);
            store_part(d, f, res + hs + j, n);
            store_part(d, g, res + 2 * hs + j, n);
            store_part(d, o, res + 3 * hs + j, n);
            store_part(d, tc, res + 6 * hs + j, n);
            store_part(d, h, s.y + r * hs + j, n);
            if (s.h_next)
                store_part(d, h, s.h_next + r * s.next_stride + j, n);
            if (s.c_next)
                store_part(d, c, s.c_next + r * s.next_stride + j, n);
        }
    }
}

void StepBackward(const LstmStepBackward& s) {
    const D d;
    const size_t hs = s.hs, lanes = hn::Lanes(d);
    const V one = hn::Set(d, 1.0f);
    for (size_t r = 0; r < s.rows; ++r) {
        const float* res = s.res + r * 7 * hs;
        float* dg = s.dg + r * 4 * hs;
        for (size_t j = 0; j < hs; j += lanes) {
            const size_t n = std::min(lanes, hs - j);
            const V i = load_part(d, res + j, n), f = load_part(d, res + hs + j, n),
                    g = load_part(d, res + 2 * hs + j, n), o = load_part(d, res + 3 * hs + j, n),
                    c_prev = load_part(d, res + 5 * hs + j, n),
                    tc = load_part(d, res + 6 * hs + j, n);
            const V dh =
                    hn::Add(load_part(d, s.dy + r * hs + j, n), load_part(d, s.dh + r * hs + j, n));
            // dc = dc_next + dh o (1 - tanh(c)^2)
            const V dc = hn::MulAdd(hn::Mul(dh, o), hn::NegMulAdd(tc, tc, one),
                                    load_part(d, s.dc + r * hs + j, n));
            const V di = hn::Mul(hn::Mul(dc, g), hn::Mul(i, hn::Sub(one, i)));
            const V df = hn::Mul(hn::Mul(dc, c_prev), hn::Mul(f, hn::Sub(one, f)));
            const V dgg = hn::Mul(hn::Mul(dc, i), hn::NegMulAdd(g, g, one));
            const V d_o = hn::Mul(hn::Mul(dh, tc), hn::Mul(o, hn::Sub(one, o)));
            store_part(d, di, dg + j, n);
            store_part(d, df, dg + hs + j, n);
            store_part(d, dgg, dg + 2 * hs + j, n);
            store_part(d, d_o, dg + 3 * hs + j, n);
            store_part(d, hn::Mul(dc, f), s.dc + r * hs + j, n);
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(StepForward);
HWY_EXPORT(StepBackward);

void lstm_step_forward(const LstmStepForward& s) {
    HWY_DYNAMIC_DISPATCH(StepForward)(s);
}

void lstm_step_backward(const LstmStepBackward& s) {
    HWY_DYNAMIC_DISPATCH(StepBackward)(s);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
