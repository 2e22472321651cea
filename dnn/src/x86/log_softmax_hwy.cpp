// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/log_softmax_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/x86/log_softmax_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Naive's loop, for rows holding a NaN or an infinity (where max, exp and log meet their edges).
HWY_INLINE void scalar_row(const float* x, float* y, size_t len) {
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < len; ++k)
        mx = std::max(mx, double(x[k]));
    double sum = 0;
    for (size_t k = 0; k < len; ++k)
        sum += std::exp(double(x[k]) - mx);
    double log_sum = std::log(sum);
    for (size_t k = 0; k < len; ++k)
        y[k] = static_cast<float>(double(x[k]) - mx - log_sum);
}

HWY_INLINE void row(const float* x, float* y, size_t len) {
    const hn::ScalableTag<float> df;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t fl = hn::Lanes(df), dl = hn::Lanes(dd);
    // The maximum (exact in float), and whether everything is finite.
    auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
    auto finite = hn::FirstN(df, fl);  // every lane
    size_t i = 0;
    for (; i + fl <= len; i += fl) {
        auto v = hn::LoadU(df, x + i);
        vmax = hn::Max(vmax, v);
        finite = hn::And(finite, hn::IsFinite(v));
    }
    float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
    bool all_finite = hn::AllTrue(df, finite);
    for (; i < len; ++i) {
        mx = std::max(mx, x[i]);
        all_finite = all_finite && std::isfinite(x[i]);
    }
    if (!all_finite) {
        scalar_row(x, y, len);
        return;
    }
    // sum(exp(x - max)) in double; x - max is in [-2 * FLT_MAX, 0], exp's range in double.
    const double m = mx;
    const auto vm = hn::Set(dd, m);
    auto acc = hn::Zero(dd);
    double tail = 0;
    for (i = 0; i + dl <= len; i += dl)
        acc = hn::Add(acc, hn::Exp(dd, hn::Sub(hn::PromoteTo(dd, hn::LoadU(dh, x + i)), vm)));
    for (; i < len; ++i)
        tail += std::exp(double(x[i]) - m);
    double lanes[64];  // more than any x86 vector's lanes
    hn::StoreU(acc, dd, lanes);
    double sum = tail;
    for (size_t j = 0; j < dl; ++j)
        sum += lanes[j];
    const double log_sum = std::log(sum);
    const auto vl = hn::Set(dd, log_sum);
    for (i = 0; i + dl <= len; i += dl) {
        auto v = hn::Sub(hn::Sub(hn::PromoteTo(dd, hn::LoadU(dh, x + i)), vm), vl);
        hn::StoreU(hn::DemoteTo(dh, v), dh, y + i);
    }
    for (; i < len; ++i)
        y[i] = static_cast<float>(double(x[i]) - m - log_sum);
}

void LogSoftmaxRows(const float* src, float* dst, size_t rb, size_t re, size_t len) {
    for (size_t r = rb; r < re; ++r)
        row(src + r * len, dst + r * len, len);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(LogSoftmaxRows);

void log_softmax_rows(const float* src, float* dst, size_t row_begin, size_t row_end, size_t len) {
    HWY_DYNAMIC_DISPATCH(LogSoftmaxRows)(src, dst, row_begin, row_end, len);
}

}  // namespace neomeg::dnn::x86
#endif
