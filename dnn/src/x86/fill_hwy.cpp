// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/fill_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstdint>

#include "src/x86/fill_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void FillElements(void* dst, const void* value, size_t elem, size_t bytes) {
    const hn::ScalableTag<uint8_t> du;
    const size_t lanes = hn::Lanes(du);
    auto* d = static_cast<uint8_t*>(dst);
    const auto* v = static_cast<const uint8_t*>(value);
    // The value repeated across a vector. dst is element aligned and the stores start on a vector
    // boundary, a whole number of elements from dst, so every store begins on an element. A
    // vector narrower than the element (HWY_SCALAR's) cannot hold it: bytes one by one there.
    size_t i = lanes % elem
                       ? bytes
                       : std::min(bytes, (lanes - reinterpret_cast<uintptr_t>(d) % lanes) % lanes);
    for (size_t j = 0; j < i; ++j)
        d[j] = v[j % elem];
    if (i == bytes)
        return;
    HWY_ALIGN uint8_t pattern[HWY_MAX_BYTES];
    for (size_t j = 0; j < lanes; ++j)
        pattern[j] = v[j % elem];
    const auto p = hn::Load(du, pattern);
    for (; i + 4 * lanes <= bytes; i += 4 * lanes) {
        hn::Store(p, du, d + i);
        hn::Store(p, du, d + i + lanes);
        hn::Store(p, du, d + i + 2 * lanes);
        hn::Store(p, du, d + i + 3 * lanes);
    }
    for (; i + lanes <= bytes; i += lanes)
        hn::Store(p, du, d + i);
    for (size_t j = 0; i + j < bytes; ++j)
        d[i + j] = pattern[j];
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(FillElements);

void fill_elements(void* dst, const void* value, size_t elem, size_t bytes) {
    HWY_DYNAMIC_DISPATCH(FillElements)(dst, value, elem, bytes);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
