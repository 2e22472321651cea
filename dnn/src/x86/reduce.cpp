// Reduce on x86: SUM, SUM_SQR, MEAN, MAX and MIN of float32 over one axis through reduce_hwy.cpp,
// for a contiguous src and dst (the (outer, axis, inner) view is then dense). Large tensors split
// their outer rows (or, with one outer row, nothing) across OpenMP threads in chunks of at least
// kParallelGrain source elements. Other dtypes and modes, strided tensors and an empty axis go to
// naive.
#include "src/common/reduce_axis.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/reduce_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

class ReduceImpl final : public LoopKernel<Reduce> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorLayout &src = inputs[0].layout, &dst = outputs[0].layout;
        size_t axis = 0;
        if (reduce_f32_supported(m_param.mode) && src.dtype == dtype::Float32 &&
            dst.dtype == dtype::Float32 && src.is_contiguous() && dst.is_contiguous() &&
            normalize_axis(m_param.axis, src.ndim, axis) && src[axis] > 0) {
            size_t outer = 1, inner = 1;
            for (size_t d = 0; d < axis; ++d)
                outer *= src[d];
            for (size_t d = axis + 1; d < src.ndim; ++d)
                inner *= src[d];
            run(static_cast<const float*>(inputs[0].raw_ptr()),
                static_cast<float*>(outputs[0].raw_ptr()), outer, src[axis], inner);
            m_last = "hwy";
            return;
        }
        run_naive(inputs, outputs, ws);
    }

private:
    void run(const float* src, float* dst, size_t outer, size_t axis, size_t inner) const {
        parallel_ranges(outer, outer * axis * inner, kParallelGrain, [&](size_t b, size_t e) {
            reduce_f32(m_param.mode, src, dst, b, e, axis, inner);
        });
    }
};

}  // namespace
NM_REGISTER_X86(Reduce, ReduceImpl);
}  // namespace neomeg::dnn::x86
