// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/small_matmul_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/x86/small_matmul_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void SmallMatmulRows(const float* a, const float* b, float* c, size_t m, size_t n, size_t k,
                     ptrdiff_t a_row, ptrdiff_t a_col, ptrdiff_t b_row, ptrdiff_t c_row) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    for (size_t i = 0; i < m; ++i) {
        const float* ai = a + static_cast<ptrdiff_t>(i) * a_row;
        float* ci = c + static_cast<ptrdiff_t>(i) * c_row;
        size_t j = 0;
        for (; j + lanes <= n; j += lanes) {
            auto acc = hn::Zero(dd);
            for (size_t p = 0; p < k; ++p) {
                const auto x =
                        hn::Set(dd, static_cast<double>(ai[static_cast<ptrdiff_t>(p) * a_col]));
                const auto y =
                        hn::PromoteTo(dd, hn::LoadU(df, b + static_cast<ptrdiff_t>(p) * b_row + j));
                acc = hn::MulAdd(x, y, acc);
            }
            hn::StoreU(hn::DemoteTo(df, acc), df, ci + j);
        }
        for (; j < n; ++j) {
            double acc = 0;
            for (size_t p = 0; p < k; ++p)
                acc += static_cast<double>(ai[static_cast<ptrdiff_t>(p) * a_col]) *
                       static_cast<double>(b[static_cast<ptrdiff_t>(p) * b_row + j]);
            ci[j] = static_cast<float>(acc);
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(SmallMatmulRows);

void small_matmul_rows_f32(const float* a, const float* b, float* c, size_t m, size_t n, size_t k,
                           ptrdiff_t a_row, ptrdiff_t a_col, ptrdiff_t b_row, ptrdiff_t c_row) {
    HWY_DYNAMIC_DISPATCH(SmallMatmulRows)(a, b, c, m, n, k, a_row, a_col, b_row, c_row);
}

}  // namespace neomeg::dnn::x86
#endif
