// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/index_rows_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/byte_runs_hwy-inl.h"
// clang-format on

#include "src/x86/index_rows_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {

template <bool kStream>
HWY_INLINE size_t CopyRows(uint8_t* d, const uint8_t* s, ptrdiff_t row_step, size_t row_bytes,
                           int64_t n, const int32_t* v, size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) {
        const int64_t r = v[k] < 0 ? v[k] + n : v[k];
        if (static_cast<uint64_t>(r) >= static_cast<uint64_t>(n))
            return k;
        if constexpr (kStream)
            StreamRun(d + k * row_bytes, s + r * row_step, row_bytes);
        else
            CopyRun(d + k * row_bytes, s + r * row_step, row_bytes);
    }
    return e;
}

size_t CopyRowsByIndex(void* dst, const void* table, ptrdiff_t row_step, size_t row_bytes,
                       int64_t n, const int32_t* v, size_t b, size_t e, bool stream) {
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(table);
    return stream ? CopyRows<true>(d, s, row_step, row_bytes, n, v, b, e)
                  : CopyRows<false>(d, s, row_step, row_bytes, n, v, b, e);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(CopyRowsByIndex);

size_t copy_rows_by_index(void* dst, const void* table, ptrdiff_t row_step, size_t row_bytes,
                          int64_t n, const int32_t* v, size_t b, size_t e, bool stream) {
    return HWY_DYNAMIC_DISPATCH(CopyRowsByIndex)(dst, table, row_step, row_bytes, n, v, b, e,
                                                 stream);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
