// CheckNonFinite on x86: float inputs whose rows are dense (see dense_rows.h) are searched by
// check_non_finite_hwy.cpp (the layout rule admits only float inputs), large ones split across
// OpenMP threads; empty inputs are skipped. An input without a unit-stride run sends the whole
// call to naive.
#include <array>
#include <atomic>
#include <optional>

#include "neomeg/dnn/operators/random.h"
#include "src/x86/check_non_finite_hwy.h"
#include "src/x86/dense_rows.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {
namespace {

class CheckNonFiniteImpl final : public LoopKernel<CheckNonFinite> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        std::vector<std::optional<Rows>> rows;
        for (const TensorND& t : inputs) {
            rows.emplace_back();
            if (t.layout.is_empty())
                continue;
            std::array<TensorLayout, 1> l = {t.layout};
            rows.back() = rows_of(l);
            if (!rows.back()) {
                run_naive(inputs, outputs, ws);
                return;
            }
        }
        std::atomic<bool> found{false};
        for (size_t i = 0; i < inputs.size() && !found.load(std::memory_order_relaxed); ++i) {
            if (!rows[i])
                continue;
            const TensorND& t = inputs[i];
            size_t esize = t.layout.dtype.size();
            parallel_for_rows(*rows[i], [&](size_t b, size_t e) {
                bool hit = false;
                for_each_run(*rows[i], b, e, [&](std::span<const ptrdiff_t> off, size_t n) {
                    hit = hit ||
                          has_non_finite(t.layout.dtype, element_at(t.raw_ptr(), off[0], esize), n);
                });
                if (hit)
                    found.store(true, std::memory_order_relaxed);
            });
        }
        *static_cast<int32_t*>(outputs[0].raw_ptr()) = found.load() ? 1 : 0;
        m_last = "hwy";
    }
};

}  // namespace
NM_REGISTER_X86(CheckNonFinite, CheckNonFiniteImpl);
}  // namespace neomeg::dnn::x86
