// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/argmax_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cmath>

#include "src/x86/argmax_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;

// Whether v replaces best under naive's scan: best is not NaN, and v is NaN or more extreme.
template <class V>
HWY_INLINE auto replaces(bool find_max, V v, V best) {
    auto better = find_max ? hn::Gt(v, best) : hn::Lt(v, best);
    return hn::AndNot(hn::IsNaN(best), hn::Or(hn::IsNaN(v), better));
}

inline bool replaces(bool find_max, float v, float best) {
    return !std::isnan(best) && (std::isnan(v) || (find_max ? v > best : v < best));
}

// One contiguous line of n >= 1 elements.
HWY_INLINE int32_t arg_row(bool find_max, const float* p, size_t n) {
    const DF df;
    const DI di;
    const size_t lanes = hn::Lanes(df);
    float best_v = p[0];
    int32_t best = 0;
    size_t i = 1;
    if (n >= 2 * lanes) {
        auto bv = hn::LoadU(df, p);
        auto bi = hn::Iota(di, 0);
        const auto step = hn::Set(di, static_cast<int32_t>(lanes));
        auto idx = bi;
        for (i = lanes; i + lanes <= n; i += lanes) {
            idx = hn::Add(idx, step);
            auto v = hn::LoadU(df, p + i);
            auto m = replaces(find_max, v, bv);
            bv = hn::IfThenElse(m, v, bv);
            bi = hn::IfThenElse(hn::RebindMask(di, m), idx, bi);
        }
        // Lanes combine: the first NaN, else the extreme value at its lowest index.
        float vals[64];
        int32_t ids[64];
        hn::StoreU(bv, df, vals);
        hn::StoreU(bi, di, ids);
        best_v = vals[0];
        best = ids[0];
        for (size_t l = 1; l < lanes; ++l) {
            bool nan_l = std::isnan(vals[l]), nan_b = std::isnan(best_v);
            bool take = nan_b ? nan_l && ids[l] < best
                              : nan_l || (find_max ? vals[l] > best_v : vals[l] < best_v) ||
                                        (vals[l] == best_v && ids[l] < best);
            if (take) {
                best_v = vals[l];
                best = ids[l];
            }
        }
    }
    // The tail's indices follow every lane's, so naive's scan continues from the result.
    for (; i < n; ++i)
        if (replaces(find_max, p[i], best_v)) {
            best_v = p[i];
            best = static_cast<int32_t>(i);
        }
    return best;
}

// Lines across the inner axis: a vector of columns scans the axis at a time.
HWY_INLINE void arg_columns(bool find_max, const float* src, int32_t* dst, size_t axis,
                            size_t inner) {
    const DF df;
    const DI di;
    const size_t lanes = hn::Lanes(df);
    size_t c = 0;
    for (; c + lanes <= inner; c += lanes) {
        auto bv = hn::LoadU(df, src + c);
        auto bi = hn::Zero(di);
        for (size_t k = 1; k < axis; ++k) {
            auto v = hn::LoadU(df, src + k * inner + c);
            auto m = replaces(find_max, v, bv);
            bv = hn::IfThenElse(m, v, bv);
            bi = hn::IfThenElse(hn::RebindMask(di, m), hn::Set(di, static_cast<int32_t>(k)), bi);
        }
        hn::StoreU(bi, di, dst + c);
    }
    for (; c < inner; ++c) {
        float best_v = src[c];
        int32_t best = 0;
        for (size_t k = 1; k < axis; ++k)
            if (replaces(find_max, src[k * inner + c], best_v)) {
                best_v = src[k * inner + c];
                best = static_cast<int32_t>(k);
            }
        dst[c] = best;
    }
}

void ArgExtreme(bool find_max, const float* src, int32_t* dst, size_t ob, size_t oe, size_t axis,
                size_t inner) {
    for (size_t o = ob; o < oe; ++o) {
        const float* line = src + o * axis * inner;
        if (inner == 1)
            dst[o] = arg_row(find_max, line, axis);
        else
            arg_columns(find_max, line, dst + o * inner, axis, inner);
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ArgExtreme);

void arg_extreme_f32(bool find_max, const float* src, int32_t* dst, size_t outer_begin,
                     size_t outer_end, size_t axis, size_t inner) {
    HWY_DYNAMIC_DISPATCH(ArgExtreme)(find_max, src, dst, outer_begin, outer_end, axis, inner);
}

}  // namespace neomeg::dnn::x86
#endif
