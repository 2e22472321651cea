// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/check_non_finite_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cstdint>

#include "src/x86/check_non_finite_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether any of n values of unsigned type U at p has every bit of `exp` set.
template <class U>
HWY_INLINE bool any_exp_all_ones(const U* p, size_t n, U exp) {
    const hn::ScalableTag<U> d;
    const size_t lanes = hn::Lanes(d);
    const auto e = hn::Set(d, exp);
    auto hit = hn::Zero(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hit = hn::Or(hit, hn::VecFromMask(d, hn::Eq(hn::And(hn::LoadU(d, p + i), e), e)));
    bool found = !hn::AllFalse(d, hn::Ne(hit, hn::Zero(d)));
    for (; i < n; ++i)
        found |= (p[i] & exp) == exp;
    return found;
}

bool HasNonFinite(DTypeEnum dt, const void* p, size_t n) {
    switch (dt) {
        case DTypeEnum::Float32:
            return any_exp_all_ones(static_cast<const uint32_t*>(p), n, uint32_t{0x7f800000});
        case DTypeEnum::Float16:
            return any_exp_all_ones(static_cast<const uint16_t*>(p), n, uint16_t{0x7c00});
        case DTypeEnum::BFloat16:
            return any_exp_all_ones(static_cast<const uint16_t*>(p), n, uint16_t{0x7f80});
        default:
            return false;
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(HasNonFinite);

bool has_non_finite(DType dt, const void* p, size_t n) {
    return HWY_DYNAMIC_DISPATCH(HasNonFinite)(dt.enumv(), p, n);
}

}  // namespace neomeg::dnn::x86
#endif
