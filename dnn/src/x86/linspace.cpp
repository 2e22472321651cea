// Linspace on x86: NumPy's start + i * step in double, stop itself as the last value when
// endpoint, converted once to the float dtype by naive's rules (from_double.h); any dst stride,
// long sequences split across OpenMP threads.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/from_double.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class LinspaceImpl final : public LoopKernel<Linspace> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        size_t n = dst.layout[0];
        ptrdiff_t stride = dst.layout.stride[0];
        double start = m_param.start, stop = m_param.stop;
        bool endpoint = m_param.endpoint;
        size_t div = endpoint ? n - 1 : n;
        double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0;
        m_last = "loop";
        dispatch_float(dst.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            T* d = static_cast<T*>(dst.raw_ptr());
            parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) {
                    double v = endpoint && n > 1 && i == n - 1
                                       ? stop
                                       : start + static_cast<double>(i) * step;
                    d[static_cast<ptrdiff_t>(i) * stride] = from_double<T>(v);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(Linspace, LinspaceImpl);
}  // namespace neomeg::dnn::x86
