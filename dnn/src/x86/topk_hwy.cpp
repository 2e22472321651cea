// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/topk_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/x86/topk_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;

// value_rank of each lane's float bits, xor flip, xor the sign bit: the unsigned rank order as
// signed order (Highway 1.0 compares unsigned lanes only on some targets).
HWY_INLINE hn::Vec<DI> signed_ranks(hn::Vec<DI> b, hn::Vec<DI> flip_sign) {
    const DI di;
    const auto magnitude = hn::And(b, hn::Set(di, 0x7FFFFFFF));
    b = hn::IfThenZeroElse(hn::Eq(magnitude, hn::Zero(di)), b);  // -0 ranks as +0
    const auto sign = hn::ShiftRight<31>(b);                     // all ones where negative
    auto rank = hn::Xor(b, hn::Or(sign, hn::Set(di, INT32_MIN)));
    rank = hn::IfThenElse(hn::Gt(magnitude, hn::Set(di, 0x7F800000)), hn::Set(di, -1), rank);
    return hn::Xor(rank, flip_sign);
}

size_t NextEntering(const float* line, size_t begin, size_t n, uint32_t flip, uint32_t top,
                    bool or_equal) {
    const DI di;
    const size_t lanes = hn::Lanes(di);
    const auto* bits = reinterpret_cast<const int32_t*>(line);
    const auto flip_sign = hn::Set(di, static_cast<int32_t>(flip ^ 0x80000000u));
    // rank < top, or rank <= top: rank < top + 1 unless top is the largest rank (then all pass).
    if (or_equal && top == 0xFFFFFFFFu)
        return begin;
    const uint32_t bound = or_equal ? top + 1 : top;
    const auto limit = hn::Set(di, static_cast<int32_t>(bound ^ 0x80000000u));
    size_t i = begin;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const auto m0 = hn::Lt(signed_ranks(hn::LoadU(di, bits + i), flip_sign), limit);
        const auto m1 = hn::Lt(signed_ranks(hn::LoadU(di, bits + i + lanes), flip_sign), limit);
        if (!hn::AllFalse(di, hn::Or(m0, m1)))
            return hn::AllFalse(di, m0) ? i + lanes + hn::FindKnownFirstTrue(di, m1)
                                        : i + hn::FindKnownFirstTrue(di, m0);
    }
    for (; i + lanes <= n; i += lanes) {
        const auto m = hn::Lt(signed_ranks(hn::LoadU(di, bits + i), flip_sign), limit);
        if (!hn::AllFalse(di, m))
            return i + hn::FindKnownFirstTrue(di, m);
    }
    return i;
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(NextEntering);

size_t topk_next_entering_f32(const float* line, size_t begin, size_t n, uint32_t flip,
                              uint32_t top, bool or_equal) {
    return HWY_DYNAMIC_DISPATCH(NextEntering)(line, begin, n, flip, top, or_equal);
}

}  // namespace neomeg::dnn::x86
#endif
