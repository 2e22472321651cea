// LogSoftmaxForward on x86: float32 along the last axis of contiguous tensors through
// log_softmax_hwy.cpp (equal to naive; oneDNN's log is not), rows split over OpenMP threads above
// the grain. Other axes, layouts and dtypes, and empty tensors go to naive.
#include "src/common/reduce_axis.h"
#include "src/x86/handle.h"
#include "src/x86/log_softmax_hwy.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class LogSoftmaxForwardImpl final : public LoopKernel<LogSoftmaxForward> {
public:
    using LoopKernel::LoopKernel;

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
            parallel_ranges(rows, rows * len, kParallelGrain,
                            [&](size_t b, size_t e) { log_softmax_rows(s, d, b, e, len); });
            m_last = "hwy";
            return;
        }
        run_naive(inputs, outputs, ws);
    }
};

}  // namespace
NM_REGISTER_X86(LogSoftmaxForward, LogSoftmaxForwardImpl);
}  // namespace neomeg::dnn::x86
