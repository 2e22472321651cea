#include "src/x86/small_matmul.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "src/x86/small_matmul_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// Each operand as (row stride, column stride) of the matrix the product reads, a transposed
// operand's two strides swapped.
struct Strides {
    ptrdiff_t row, col;
};

Strides strides_of(const TensorLayout& l, bool transposed) {
    return transposed ? Strides{l.stride[1], l.stride[0]} : Strides{l.stride[0], l.stride[1]};
}

class SmallMatmulPlan final : public Plan {
public:
    SmallMatmulPlan(size_t m, size_t n, size_t k, Strides a, Strides b, Strides c)
        : m_m(m), m_n(n), m_k(k), m_a(a), m_b(b), m_c(c) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:small_matmul"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const auto* a = static_cast<const float*>(t[0].raw_ptr());
        const auto* b = static_cast<const float*>(t[1].raw_ptr());
        auto* c = static_cast<float*>(t[2].raw_ptr());
        if (m_b.col == 1 && m_c.col == 1) {
            small_matmul_rows_f32(a, b, c, m_m, m_n, m_k, m_a.row, m_a.col, m_b.row, m_c.row);
            return;
        }
        // One row of C at a time, summed over K in order (naive's order per element); N is at
        // most kSmallMatmulWork.
        std::array<double, kSmallMatmulWork> acc;
        for (size_t i = 0; i < m_m; ++i) {
            std::fill_n(acc.begin(), m_n, 0.0);
            const float* ai = a + static_cast<ptrdiff_t>(i) * m_a.row;
            for (size_t p = 0; p < m_k; ++p) {
                double x = ai[static_cast<ptrdiff_t>(p) * m_a.col];
                const float* bp = b + static_cast<ptrdiff_t>(p) * m_b.row;
                for (size_t j = 0; j < m_n; ++j)
                    acc[j] += x * static_cast<double>(bp[static_cast<ptrdiff_t>(j) * m_b.col]);
            }
            float* ci = c + static_cast<ptrdiff_t>(i) * m_c.row;
            for (size_t j = 0; j < m_n; ++j)
                ci[static_cast<ptrdiff_t>(j) * m_c.col] = static_cast<float>(acc[j]);
        }
    }

private:
    size_t m_m, m_n, m_k;
    Strides m_a, m_b, m_c;
};

}  // namespace

std::unique_ptr<Plan> small_matmul_plan(const TensorLayout& a, const TensorLayout& b,
                                        const TensorLayout& c, bool trans_a, bool trans_b) {
    if (a.ndim != 2 || b.ndim != 2 || c.ndim != 2 || a.dtype != dtype::Float32 ||
        b.dtype != dtype::Float32 || c.dtype != dtype::Float32)
        return nullptr;
    size_t m = c[0], n = c[1], k = trans_a ? a[0] : a[1];
    if (m == 0 || n == 0 || k == 0 || m * n * k > kSmallMatmulWork)
        return nullptr;
    return std::make_unique<SmallMatmulPlan>(m, n, k, strides_of(a, trans_a),
                                             strides_of(b, trans_b), strides_of(c, false));
}

}  // namespace neomeg::dnn::x86
