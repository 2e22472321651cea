// Fill on x86: a contiguous float32 dst is one std::fill_n per thread's range (which the compiler
// vectorises); other dtypes and strided dsts go to naive. Models start with it (every bias and
// BatchNorm weight), so it should not cost a naive per-element walk.
#include <algorithm>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class FillImpl final : public LoopKernel<Fill> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND& dst = outputs[0];
        if (dst.layout.dtype != dtype::Float32 || !dst.layout.is_contiguous()) {
            run_naive(inputs, outputs, ws);
            return;
        }
        auto* d = static_cast<float*>(dst.raw_ptr());
        const size_t n = dst.layout.total_nr_elems();
        const auto v = static_cast<float>(m_param.value);
        parallel_ranges(n, n, kParallelGrain,
                        [&](size_t b, size_t e) { std::fill_n(d + b, e - b, v); });
        m_last = "loop";
    }
};

}  // namespace
NM_REGISTER_X86(Fill, FillImpl);
}  // namespace neomeg::dnn::x86
