// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/padding_constant_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/byte_runs_hwy-inl.h"
// clang-format on

#include <cstdint>

#include "src/x86/padding_constant_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void PadConstantRows(const ConstantPadRows& p, size_t b, size_t e) {
    const hn::ScalableTag<uint8_t> du;
    const FillPattern pattern(p.value, p.elem);
    const auto v = hn::Load(du, pattern.bytes);
    const size_t outer = p.ndim - 1;
    // Row b's index over the outer axes and its offsets in src and dst.
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    ptrdiff_t so = 0;
    size_t dof = p.origin;
    for (size_t k = outer, rest = b; k-- > 0;) {
        idx[k] = rest % p.shape[k];
        rest /= p.shape[k];
        so += static_cast<ptrdiff_t>(idx[k]) * p.src_step[k];
        dof += idx[k] * p.dst_step[k];
    }
    // Where the border before row b starts: dst's start, or the end of row b - 1.
    size_t done = 0;
    if (b > 0) {
        size_t prev = p.origin;
        for (size_t k = outer, rest = b - 1; k-- > 0;) {
            prev += rest % p.shape[k] * p.dst_step[k];
            rest /= p.shape[k];
        }
        done = prev + p.row_bytes;
    }
    auto* d = reinterpret_cast<uint8_t*>(p.dst);
    const auto* s = reinterpret_cast<const uint8_t*>(p.src);
    for (size_t r = b; r < e; ++r) {
        FillRun(d + done, dof - done, v, pattern.bytes);
        CopyRun(d + dof, s + so, p.row_bytes);
        done = dof + p.row_bytes;
        for (size_t k = outer; k-- > 0;) {
            so += p.src_step[k];
            dof += p.dst_step[k];
            if (++idx[k] < p.shape[k])
                break;
            so -= static_cast<ptrdiff_t>(p.shape[k]) * p.src_step[k];
            dof -= p.shape[k] * p.dst_step[k];
            idx[k] = 0;
        }
    }
    if (e == p.rows)
        FillRun(d + done, p.dst_bytes - done, v, pattern.bytes);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(PadConstantRows);

void pad_constant_rows(const ConstantPadRows& p, size_t b, size_t e) {
    HWY_DYNAMIC_DISPATCH(PadConstantRows)(p, b, e);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
