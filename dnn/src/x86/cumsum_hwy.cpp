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
HWY_INLINE ptrdiff_t at(size_t k, size_t axis, bool reverse) {
    return static_cast<ptrdiff_t>(reverse ? axis - 1 - k : k);
}

void Cumsum(const float* src, float* dst, const CumsumLines& l) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    size_t c = 0;
    // Columns next to each other in src and dst scan as a vector; other columns (a line of its
    // own, or columns strided in either tensor) one by one.
    const bool dense = l.src_col == 1 && l.dst_col == 1;
    for (; dense && l.cols > 1 && c + lanes <= l.cols; c += lanes) {
        auto acc = hn::Zero(dd);
        for (size_t k = 0; k < l.n; ++k) {
            const ptrdiff_t i = at(k, l.n, l.reverse);
            auto v = hn::PromoteTo(dd, hn::LoadU(df, src + i * l.src_step + c));
            if (!l.exclusive)
                acc = hn::Add(acc, v);
            hn::StoreU(hn::DemoteTo(df, acc), df, dst + i * l.dst_step + c);
            if (l.exclusive)
                acc = hn::Add(acc, v);
        }
    }
    for (; c < l.cols; ++c) {
        const float* s = src + static_cast<ptrdiff_t>(c) * l.src_col;
        float* d = dst + static_cast<ptrdiff_t>(c) * l.dst_col;
        double acc = 0;
        for (size_t k = 0; k < l.n; ++k) {
            const ptrdiff_t i = at(k, l.n, l.reverse);
            double v = s[i * l.src_step];
            if (!l.exclusive)
                acc += v;
            d[i * l.dst_step] = static_cast<float>(acc);
            if (l.exclusive)
                acc += v;
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Cumsum);

void cumsum_f32(const float* src, float* dst, const CumsumLines& lines) {
    HWY_DYNAMIC_DISPATCH(Cumsum)(src, dst, lines);
}

}  // namespace neomeg::dnn::x86
#endif
