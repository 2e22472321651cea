// Fill on x86: a contiguous dst of any dtype is one fill_elements per thread's range (vector
// stores of the value's bytes, fill_hwy.h); strided and complex64 dsts go to naive. Models start
// with it (every bias and BatchNorm weight), and autograd fills int32 zero gradients (ROIPooling's
// argmax), so no dtype should cost naive's per-element offset walk.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/fill_value.h"
#include "src/x86/fill_hwy.h"
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
        if (!dst.layout.is_contiguous() || dst.layout.dtype.is_complex()) {
            run_naive(inputs, outputs, ws);
            return;
        }
        const size_t n = dst.layout.total_nr_elems();
        dispatch_dtype(dst.layout.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            auto* d = static_cast<T*>(dst.raw_ptr());
            const T v = fill_value<T>(m_param);
            // The grain counts elements of float32's size, so a narrower dtype splits as late.
            parallel_ranges(n, n * sizeof(T) / sizeof(float), kParallelGrain,
                            [&](size_t b, size_t e) {
                                fill_elements(d + b, &v, sizeof(T), (e - b) * sizeof(T));
                            });
        });
        m_last = "loop";
    }
};

}  // namespace
NM_REGISTER_X86(Fill, FillImpl);
}  // namespace neomeg::dnn::x86
