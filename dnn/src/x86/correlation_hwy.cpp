// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/correlation_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cmath>

#include "src/x86/correlation_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Four displacements a pass over a's run: each vector of a is loaded once for the four runs of
// b, and four independent accumulators hide the FMA's latency.
struct MulTerm {
    template <class D, class V>
    static V acc(D, V s, V a, V b) {
        return hn::MulAdd(a, b, s);
    }
    static float term(float a, float b) { return a * b; }
};
struct AbsDiffTerm {
    template <class D, class V>
    static V acc(D, V s, V a, V b) {
        return hn::Add(s, hn::Abs(hn::Sub(a, b)));
    }
    static float term(float a, float b) { return std::fabs(a - b); }
};

template <class Term>
HWY_INLINE void Many(const float* a, const float* b, size_t step, size_t count, size_t n,
                     float* out) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    size_t k = 0;
    for (; k + 4 <= count; k += 4) {
        const float* b0 = b + k * step;
        const float *b1 = b0 + step, *b2 = b1 + step, *b3 = b2 + step;
        auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
        size_t i = 0;
        for (; i + lanes <= n; i += lanes) {
            const auto va = hn::LoadU(d, a + i);
            s0 = Term::acc(d, s0, va, hn::LoadU(d, b0 + i));
            s1 = Term::acc(d, s1, va, hn::LoadU(d, b1 + i));
            s2 = Term::acc(d, s2, va, hn::LoadU(d, b2 + i));
            s3 = Term::acc(d, s3, va, hn::LoadU(d, b3 + i));
        }
        float r[4] = {hn::GetLane(hn::SumOfLanes(d, s0)), hn::GetLane(hn::SumOfLanes(d, s1)),
                      hn::GetLane(hn::SumOfLanes(d, s2)), hn::GetLane(hn::SumOfLanes(d, s3))};
        for (; i < n; ++i) {
            r[0] += Term::term(a[i], b0[i]);
            r[1] += Term::term(a[i], b1[i]);
            r[2] += Term::term(a[i], b2[i]);
            r[3] += Term::term(a[i], b3[i]);
        }
        for (size_t j = 0; j < 4; ++j)
            out[k + j] = r[j];
    }
    for (; k < count; ++k) {
        const float* bk = b + k * step;
        auto s = hn::Zero(d);
        size_t i = 0;
        for (; i + lanes <= n; i += lanes)
            s = Term::acc(d, s, hn::LoadU(d, a + i), hn::LoadU(d, bk + i));
        float r = hn::GetLane(hn::SumOfLanes(d, s));
        for (; i < n; ++i)
            r += Term::term(a[i], bk[i]);
        out[k] = r;
    }
}

void CorrDotMany(const float* a, const float* b, size_t step, size_t count, size_t n, float* out) {
    Many<MulTerm>(a, b, step, count, n, out);
}
void CorrAbsDiffMany(const float* a, const float* b, size_t step, size_t count, size_t n,
                     float* out) {
    Many<AbsDiffTerm>(a, b, step, count, n, out);
}

void CorrAxpy(float* acc, float alpha, const float* x, size_t n) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    const auto va = hn::Set(d, alpha);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, acc + i)), d, acc + i);
    for (; i < n; ++i)
        acc[i] += alpha * x[i];
}

void CorrSignAcc(float* acc, float alpha, const float* p, const float* q, size_t n) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    const auto pos = hn::Set(d, alpha), neg = hn::Set(d, -alpha);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        auto gt = hn::Gt(hn::LoadU(d, p + i), hn::LoadU(d, q + i));
        hn::StoreU(hn::Add(hn::LoadU(d, acc + i), hn::IfThenElse(gt, pos, neg)), d, acc + i);
    }
    for (; i < n; ++i)
        acc[i] += p[i] > q[i] ? alpha : -alpha;
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(CorrDotMany);
HWY_EXPORT(CorrAbsDiffMany);
HWY_EXPORT(CorrAxpy);
HWY_EXPORT(CorrSignAcc);

void corr_dot_many_f32(const float* a, const float* b, size_t step, size_t count, size_t n,
                       float* out) {
    HWY_DYNAMIC_DISPATCH(CorrDotMany)(a, b, step, count, n, out);
}
void corr_absdiff_many_f32(const float* a, const float* b, size_t step, size_t count, size_t n,
                           float* out) {
    HWY_DYNAMIC_DISPATCH(CorrAbsDiffMany)(a, b, step, count, n, out);
}
void corr_axpy_f32(float* acc, float alpha, const float* x, size_t n) {
    HWY_DYNAMIC_DISPATCH(CorrAxpy)(acc, alpha, x, n);
}
void corr_sign_acc_f32(float* acc, float alpha, const float* p, const float* q, size_t n) {
    HWY_DYNAMIC_DISPATCH(CorrSignAcc)(acc, alpha, p, q, n);
}

}  // namespace neomeg::dnn::x86
#endif
