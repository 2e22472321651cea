// Arange on x86: start + i * step computed in double per element (no error accumulates) and
// converted by naive's rules (from_double.h), every dtype naive takes and any dst stride, long
// sequences split across OpenMP threads.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/from_double.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class ArangeImpl final : public LoopKernel<Arange> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        size_t n = dst.layout[0];
        ptrdiff_t stride = dst.layout.stride[0];
        double start = m_param.start, step = m_param.step;
        m_last = "loop";
        dispatch_numeric(dst.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            T* d = static_cast<T*>(dst.raw_ptr());
            parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i)
                    d[static_cast<ptrdiff_t>(i) * stride] =
                            from_double<T>(start + static_cast<double>(i) * step);
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(Arange, ArangeImpl);
}  // namespace neomeg::dnn::x86
