// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has. Vectors are counted in doubles, the type
// the scale multiplies in; the floats, words and mask bytes of the same elements are rebinds.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/dropout_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/common/philox.h"
#include "src/x86/dropout_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DropoutKeep(const uint32_t* words, const float* x, float p, double scale, uint8_t* mask,
                 float* y, size_t n) {
    size_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::Rebind<uint32_t, decltype(dd)> du;
    const hn::Rebind<int32_t, decltype(dd)> di;
    const hn::Rebind<uint8_t, decltype(dd)> d8;
    const size_t lanes = hn::Lanes(dd);
    const auto vp = hn::Set(df, p);
    const auto vscale = hn::Set(dd, scale);
    // unit_interval(w, 24): the top 24 bits, exact in float, times 2^-24.
    const auto unit = hn::Set(df, 1.0f / 16777216.0f);
    for (; j + lanes <= n; j += lanes) {
        const auto top = hn::BitCast(di, hn::ShiftRight<8>(hn::LoadU(du, words + j)));
        const auto keep = hn::Ge(hn::Mul(hn::ConvertTo(df, top), unit), vp);
        const auto v = hn::DemoteTo(df, hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, x + j)), vscale));
        hn::StoreU(hn::IfThenElseZero(keep, v), df, y + j);
        const auto bit = hn::IfThenElseZero(hn::RebindMask(di, keep), hn::Set(di, 1));
        hn::StoreU(hn::DemoteTo(d8, bit), d8, mask + j);
    }
#endif
    for (; j < n; ++j) {
        const bool keep = philox::unit_interval(words[j], 24) >= p;
        mask[j] = keep ? 1 : 0;
        y[j] = keep ? static_cast<float>(double(x[j]) * scale) : 0.0f;
    }
}

void DropoutGrad(const float* dy, const uint8_t* mask, double scale, float* g, size_t n) {
    size_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::Rebind<uint32_t, decltype(dd)> du;
    const hn::Rebind<uint8_t, decltype(dd)> d8;
    const size_t lanes = hn::Lanes(dd);
    const auto vscale = hn::Set(dd, scale);
    for (; j + lanes <= n; j += lanes) {
        const auto keep = hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, mask + j)), hn::Zero(du));
        const auto v = hn::DemoteTo(df, hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, dy + j)), vscale));
        hn::StoreU(hn::IfThenElseZero(hn::RebindMask(df, keep), v), df, g + j);
    }
#endif
    for (; j < n; ++j)
        g[j] = mask[j] ? static_cast<float>(double(dy[j]) * scale) : 0.0f;
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(DropoutKeep);
HWY_EXPORT(DropoutGrad);

void dropout_keep(const uint32_t* words, const float* x, float p, double scale, uint8_t* mask,
                  float* y, size_t n) {
    HWY_DYNAMIC_DISPATCH(DropoutKeep)(words, x, p, scale, mask, y, n);
}

void dropout_grad(const float* dy, const uint8_t* mask, double scale, float* g, size_t n) {
    HWY_DYNAMIC_DISPATCH(DropoutGrad)(dy, mask, scale, g, n);
}

}  // namespace neomeg::dnn::x86
#endif
