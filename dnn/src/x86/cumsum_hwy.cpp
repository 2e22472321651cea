// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/cumsum_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/x86/cumsum_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The k-th step's element along the axis.
HWY_INLINE size_t at(size_t k, size_t axis, bool reverse) {
    return reverse ? axis - 1 - k : k;
}

void Cumsum(const float* src, float* dst, size_t ob, size_t oe, size_t axis, size_t inner,
            bool exclusive, bool reverse) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    for (size_t o = ob; o < oe; ++o) {
        const float* s = src + o * axis * inner;
        float* d = dst + o * axis * inner;
        size_t c = 0;
        for (; inner > 1 && c + lanes <= inner; c += lanes) {
            auto acc = hn::Zero(dd);
            for (size_t k = 0; k < axis; ++k) {
                size_t off = at(k, axis, reverse) * inner + c;
                auto v = hn::PromoteTo(dd, hn::LoadU(df, s + off));
                if (!exclusive)
                    acc = hn::Add(acc, v);
                hn::StoreU(hn::DemoteTo(df, acc), df, d + off);
                if (exclusive)
                    acc = hn::Add(acc, v);
            }
        }
        for (; c < inner; ++c) {
            double acc = 0;
            for (size_t k = 0; k < axis; ++k) {
                size_t off = at(k, axis, reverse) * inner + c;
                double v = s[off];
                if (!exclusive)
                    acc += v;
                d[off] = static_cast<float>(acc);
                if (exclusive)
                    acc += v;
            }
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Cumsum);

void cumsum_f32(const float* src, float* dst, size_t outer_begin, size_t outer_end, size_t axis,
                size_t inner, bool exclusive, bool reverse) {
    HWY_DYNAMIC_DISPATCH(Cumsum)(src, dst, outer_begin, outer_end, axis, inner, exclusive, reverse);
}

}  // namespace neomeg::dnn::x86
#endif
