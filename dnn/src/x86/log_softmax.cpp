// LogSoftmaxForward on x86: float32 along the last axis of contiguous tensors through
// log_softmax_hwy.cpp (equal to naive; oneDNN's log is not), rows split over OpenMP threads above
// the grain. Other axes, layouts and dtypes, and empty tensors go to naive.
#include "src/common/reduce_axis.h"
#include "src/x86/handle.h"
#include "src/x86/kernel_report.h"
#include "src/x86/log_softmax_hwy.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

constexpr size_t kGrain = size_t(1) << 16;

class LogSoftmaxForwardImpl final : public LogSoftmaxForward, public KernelReport {
public:
    using LogSoftmaxForward::LogSoftmaxForward;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return naive().get_workspace_in_bytes(inputs, outputs);
    }

    const char* last_kernel() const override { return m_last; }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorLayout &src = inputs[0].layout, &dst = outputs[0].layout;
        size_t axis = 0;
        if (src.dtype == dtype::Float32 && dst.dtype == dtype::Float32 && !src.is_empty() &&
            src.is_contiguous() && dst.is_contiguous() &&
            normalize_axis(m_param.axis, src.ndim, axis) && axis + 1 == src.ndim) {
            size_t len = src[axis], rows = src.total_nr_elems() / len;
            const auto* s = static_cast<const float*>(inputs[0].raw_ptr());
            auto* d = static_cast<float*>(outputs[0].raw_ptr());
            parallel_ranges(rows, rows * len, kGrain,
                            [&](size_t b, size_t e) { log_softmax_rows(s, d, b, e, len); });
            m_last = "hwy";
            return;
        }
        naive().exec_unchecked(inputs, outputs, ws);
        m_last = "naive";
    }

private:
    LogSoftmaxForward& naive() {
        if (!m_naive)
            m_naive =
                    static_cast<HandleImpl*>(handle())->create_naive_operator<LogSoftmaxForward>();
        m_naive->param() = m_param;
        return *m_naive;
    }

    std::unique_ptr<LogSoftmaxForward> m_naive;
    const char* m_last = "";
};

}  // namespace
NM_REGISTER_X86(LogSoftmaxForward, LogSoftmaxForwardImpl);
}  // namespace neomeg::dnn::x86
