// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. Built with
// -ffp-contract=off (dnn/CMakeLists.txt): a product and a sum fused into one FMA would round
// once where the scalar formulas round twice.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/fake_quant_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/common/fake_quant_math.h"
#include "src/x86/fake_quant_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace fq = fake_quant;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// roundf: halves away from zero. v - trunc(v) is exact, and so is trunc(v) +- 1 where it is
// taken (|v| < 2^23); a zero keeps its sign, as roundf's does.
HWY_INLINE V RoundAway(D d, V v) {
    V t = hn::Trunc(v);
    auto up = hn::Ge(hn::Abs(hn::Sub(v, t)), hn::Set(d, 0.5f));
    return hn::IfThenElse(up, hn::Add(t, hn::CopySign(hn::Set(d, 1.0f), v)), t);
}

// fmaxf(fminf(v, qmax), qmin): x86's min/max return their second operand when the first is
// NaN, so a NaN becomes qmax as with fminf.
HWY_INLINE V Clamp(V v, V lo, V hi) {
    return hn::Max(hn::Min(v, hi), lo);
}

struct Row {
    const float* const* in;
    const bool* bcast;
    HWY_INLINE V operator()(D d, size_t k, size_t i) const {
        return bcast[k] ? hn::Set(d, in[k][0]) : hn::LoadU(d, in[k] + i);
    }
    float at(size_t k, size_t i) const { return bcast[k] ? in[k][0] : in[k][i]; }
};

void FakeQuantRow(FqKind kind, const float* const* in, const bool* bcast, float* const* out,
                  size_t n, float qmin, float qmax) {
    const D d;
    const size_t lanes = hn::Lanes(d);
    const V lo = hn::Set(d, qmin), hi = hn::Set(d, qmax);
    const Row x{in, bcast};
    const fq::Range r{qmin, qmax};
    size_t i = 0;
    switch (kind) {
        case FqKind::FakeQuant:
            for (; i + lanes <= n; i += lanes) {
                V s = x(d, 1, i), z = x(d, 2, i);
                V q = Clamp(hn::Add(RoundAway(d, hn::Div(x(d, 0, i), s)), z), lo, hi);
                hn::StoreU(hn::Mul(hn::Sub(q, z), s), d, out[0] + i);
            }
            for (; i < n; ++i)
                out[0][i] = fq::fake_quant(x.at(0, i), x.at(1, i), x.at(2, i), r);
            break;
        case FqKind::FakeQuantGrad:
            for (; i + lanes <= n; i += lanes) {
                V q = hn::Add(RoundAway(d, hn::Div(x(d, 1, i), x(d, 2, i))), x(d, 3, i));
                auto in_range = hn::And(hn::Le(q, hi), hn::Ge(q, lo));
                hn::StoreU(hn::IfThenElseZero(in_range, x(d, 0, i)), d, out[0] + i);
            }
            for (; i < n; ++i)
                out[0][i] = fq::fake_quant_grad(x.at(0, i), x.at(1, i), x.at(2, i), x.at(3, i), r);
            break;
        case FqKind::TQT:  // in[1] is the step t
            for (; i + lanes <= n; i += lanes) {
                V t = x(d, 1, i);
                hn::StoreU(hn::Mul(Clamp(RoundAway(d, hn::Div(x(d, 0, i), t)), lo, hi), t), d,
                           out[0] + i);
            }
            for (; i < n; ++i) {
                float t = x.at(1, i);
                out[0][i] = fq::clamp(roundf(x.at(0, i) / t), r) * t;
            }
            break;
        case FqKind::TQTGrad: {  // in[2] is the step t
            const V lo_h = hn::Set(d, qmin - 0.5f), hi_h = hn::Set(d, qmax + 0.5f);
            const V ln2 = hn::Set(d, fq::kLn2);
            for (; i + lanes <= n; i += lanes) {
                V dy = x(d, 0, i), t = x(d, 2, i);
                V scaled = hn::Div(x(d, 1, i), t);
                V rounded = Clamp(RoundAway(d, scaled), lo, hi);
                auto clipped = hn::Or(hn::Lt(scaled, lo_h), hn::Gt(scaled, hi_h));
                V ds = hn::IfThenElse(clipped, rounded, hn::Sub(rounded, scaled));
                hn::StoreU(hn::IfThenZeroElse(clipped, dy), d, out[0] + i);
                hn::StoreU(hn::Mul(hn::Mul(hn::Mul(dy, ds), t), ln2), d, out[1] + i);
            }
            for (; i < n; ++i) {
                float dy = x.at(0, i), t = x.at(2, i), scaled = x.at(1, i) / t;
                float rounded = fq::clamp(roundf(scaled), r);
                bool clipped = scaled < qmin - 0.5f || scaled > qmax + 0.5f;
                float ds = clipped ? rounded : rounded - scaled;
                out[0][i] = clipped ? 0.f : dy;
                out[1][i] = dy * ds * t * fq::kLn2;
            }
            break;
        }
        case FqKind::LSQ:
            for (; i + lanes <= n; i += lanes) {
                V s = x(d, 1, i), z = x(d, 2, i);
                V q = RoundAway(d, Clamp(hn::Add(hn::Div(x(d, 0, i), s), z), lo, hi));
                hn::StoreU(hn::Mul(hn::Sub(q, z), s), d, out[0] + i);
            }
            for (; i < n; ++i)
                out[0][i] = fq::lsq(x.at(0, i), x.at(1, i), x.at(2, i), r);
            break;
        case FqKind::LSQGrad:
            for (; i + lanes <= n; i += lanes) {
                V dy = x(d, 0, i);
                V v = hn::Add(hn::Div(x(d, 1, i), x(d, 2, i)), x(d, 3, i));
                auto small = hn::Lt(v, lo), big = hn::Gt(v, hi);
                V ds = hn::IfThenElse(small, lo,
                                      hn::IfThenElse(big, hi, hn::Sub(RoundAway(d, v), v)));
                hn::StoreU(hn::IfThenZeroElse(hn::Or(small, big), dy), d, out[0] + i);
                hn::StoreU(hn::Mul(hn::Mul(ds, x(d, 4, i)), dy), d, out[1] + i);
            }
            for (; i < n; ++i) {
                fq::Grads g =
                        fq::lsq_grad(x.at(0, i), x.at(1, i), x.at(2, i), x.at(3, i), x.at(4, i), r);
                out[0][i] = g.src;
                out[1][i] = g.scale;
            }
            break;
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(FakeQuantRow);

void fake_quant_row(FqKind kind, const float* const* in, const bool* bcast, float* const* out,
                    size_t n, float qmin, float qmax) {
    HWY_DYNAMIC_DISPATCH(FakeQuantRow)(kind, in, bcast, out, n, qmin, qmax);
}

}  // namespace neomeg::dnn::x86
#endif
