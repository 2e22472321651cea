// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/roi_bins_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/x86/roi_bins_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void RoiBins(const float* img, size_t cp, const RoiTapList& t, bool max, float* val,
             int32_t* arg_out) {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const size_t lanes = hn::Lanes(df);
    // Sample q's value in the channels [c, c + lanes).
    auto sample = [&](uint32_t q, size_t c) {
        uint32_t b = q ? t.sample_end[q - 1] : 0, e = t.sample_end[q];
        if (b == e)
            return hn::Zero(df);
        auto v = hn::Mul(hn::Set(df, t.w[b]), hn::LoadU(df, img + size_t(t.pix[b]) * cp + c));
        for (uint32_t k = b + 1; k < e; ++k)
            v = hn::MulAdd(hn::Set(df, t.w[k]), hn::LoadU(df, img + size_t(t.pix[k]) * cp + c), v);
        return v;
    };
    for (size_t bin = 0; bin < t.bins; ++bin) {
        const uint32_t first = bin ? t.bin_end[bin - 1] : 0, end = t.bin_end[bin];
        float* vo = val + bin * cp;
        int32_t* ro = arg_out + bin * cp;
        for (size_t c = 0; c < cp; c += lanes) {
            if (first == end) {
                hn::StoreU(hn::Zero(df), df, vo + c);
                hn::StoreU(hn::Set(di, -1), di, ro + c);
                continue;
            }
            if (max) {
                auto best = sample(first, c);
                auto arg = hn::Set(di, t.sample_arg[first]);
                for (uint32_t q = first + 1; q < end; ++q) {
                    auto v = sample(q, c);
                    auto take = hn::Gt(v, best);
                    best = hn::IfThenElse(take, v, best);
                    arg = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, t.sample_arg[q]),
                                         arg);
                }
                hn::StoreU(best, df, vo + c);
                hn::StoreU(arg, di, ro + c);
                continue;
            }
            auto sum = sample(first, c);
            for (uint32_t q = first + 1; q < end; ++q)
                sum = hn::Add(sum, sample(q, c));
            hn::StoreU(hn::Div(sum, hn::Set(df, static_cast<float>(end - first))), df, vo + c);
            hn::StoreU(hn::Set(di, -1), di, ro + c);
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(RoiBins);

void roi_bins_f32(const float* img, size_t cp, const RoiTapList& t, bool max, float* val,
                  int32_t* arg) {
    HWY_DYNAMIC_DISPATCH(RoiBins)(img, cp, t, max, val, arg);
}

}  // namespace neomeg::dnn::x86
#endif
