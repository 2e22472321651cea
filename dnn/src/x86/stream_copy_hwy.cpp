// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/stream_copy_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include "src/x86/byte_runs_hwy-inl.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/x86/stream_copy_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void StreamBytes(void* dst, const void* src, size_t n) {
    StreamRun(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
}

void CopyBytes(void* dst, const void* src, size_t n) {
    const hn::ScalableTag<uint8_t> du;
    const size_t lanes = hn::Lanes(du);
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    // Stores aligned to the vector (an unaligned one splits across two cache lines), loads not.
    size_t i = std::min(n, (lanes - reinterpret_cast<uintptr_t>(d) % lanes) % lanes);
    std::memcpy(d, s, i);
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        const auto v0 = hn::LoadU(du, s + i), v1 = hn::LoadU(du, s + i + lanes);
        const auto v2 = hn::LoadU(du, s + i + 2 * lanes), v3 = hn::LoadU(du, s + i + 3 * lanes);
        hn::Store(v0, du, d + i);
        hn::Store(v1, du, d + i + lanes);
        hn::Store(v2, du, d + i + 2 * lanes);
        hn::Store(v3, du, d + i + 3 * lanes);
    }
    for (; i + lanes <= n; i += lanes)
        hn::Store(hn::LoadU(du, s + i), du, d + i);
    std::memcpy(d + i, s + i, n - i);  // under one vector: never rep movsb
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(StreamBytes);
HWY_EXPORT(CopyBytes);

void copy_bytes(void* dst, const void* src, size_t n) {
    HWY_DYNAMIC_DISPATCH(CopyBytes)(dst, src, n);
}

void stream_bytes(void* dst, const void* src, size_t n) {
    HWY_DYNAMIC_DISPATCH(StreamBytes)(dst, src, n);
}

void stream_fence() {
    hwy::FlushStream();
}

}  // namespace neomeg::dnn::x86
#endif
