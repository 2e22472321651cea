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

constexpr size_t kScalarLines = 4;

// Lines c to c + K - 1, one element of each per step, each in naive's order.
template <size_t K>
HWY_INLINE void scan_scalar(const float* src, float* dst, size_t c, const CumsumLines& l) {
    const float* s[K];
    float* d[K];
    double acc[K];
    for (size_t j = 0; j < K; ++j) {
        s[j] = src + static_cast<ptrdiff_t>(c + j) * l.src_col;
        d[j] = dst + static_cast<ptrdiff_t>(c + j) * l.dst_col;
        acc[j] = 0;
    }
    for (size_t k = 0; k < l.n; ++k) {
        const ptrdiff_t i = at(k, l.n, l.reverse);
        for (size_t j = 0; j < K; ++j) {
            const double v = s[j][i * l.src_step];
            if (!l.exclusive)
                acc[j] += v;
            d[j][i * l.dst_step] = static_cast<float>(acc[j]);
            if (l.exclusive)
                acc[j] += v;
        }
    }
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
    // Scalar lines kScalarLines at a time: each line's additions form one dependent chain (an
    // addition's latency per element), so independent lines interleaved keep the adders busy.
    for (; c + kScalarLines <= l.cols; c += kScalarLines)
        scan_scalar<kScalarLines>(src, dst, c, l);
    for (; c < l.cols; ++c)
        scan_scalar<1>(src, dst, c, l);
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
