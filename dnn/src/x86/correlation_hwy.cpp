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

float CorrDot(const float* a, const float* b, size_t n) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
        s1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes), s1);
    }
    for (; i + lanes <= n; i += lanes)
        s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
    float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    for (; i < n; ++i)
        s += a[i] * b[i];
    return s;
}

float CorrAbsDiff(const float* a, const float* b, size_t n) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    auto s = hn::Zero(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        s = hn::Add(s, hn::Abs(hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i))));
    float r = hn::GetLane(hn::SumOfLanes(d, s));
    for (; i < n; ++i)
        r += std::fabs(a[i] - b[i]);
    return r;
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

HWY_EXPORT(CorrDot);
HWY_EXPORT(CorrAbsDiff);
HWY_EXPORT(CorrAxpy);
HWY_EXPORT(CorrSignAcc);

float corr_dot_f32(const float* a, const float* b, size_t n) {
    return HWY_DYNAMIC_DISPATCH(CorrDot)(a, b, n);
}
float corr_absdiff_f32(const float* a, const float* b, size_t n) {
    return HWY_DYNAMIC_DISPATCH(CorrAbsDiff)(a, b, n);
}
void corr_axpy_f32(float* acc, float alpha, const float* x, size_t n) {
    HWY_DYNAMIC_DISPATCH(CorrAxpy)(acc, alpha, x, n);
}
void corr_sign_acc_f32(float* acc, float alpha, const float* p, const float* q, size_t n) {
    HWY_DYNAMIC_DISPATCH(CorrSignAcc)(acc, alpha, p, q, n);
}

}  // namespace neomeg::dnn::x86
#endif
