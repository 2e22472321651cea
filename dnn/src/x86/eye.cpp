// Eye on x86: each row of the 2-D dst zeroed and its element on the k-th diagonal set to one,
// every dtype and any strides, rows split across OpenMP threads.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class EyeImpl final : public LoopKernel<Eye> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        const TensorLayout& l = dst.layout;
        size_t rows = l[0], cols = l[1];
        int64_t k = m_param.k;
        m_last = "loop";
        dispatch_dtype(l.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            T* d = static_cast<T*>(dst.raw_ptr());
            parallel_ranges(rows, rows * cols, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t r = b; r < e; ++r) {
                    T* row = d + static_cast<ptrdiff_t>(r) * l.stride[0];
                    for (size_t c = 0; c < cols; ++c)
                        row[static_cast<ptrdiff_t>(c) * l.stride[1]] = T(0);
                    int64_t c = static_cast<int64_t>(r) + k;
                    if (c >= 0 && c < static_cast<int64_t>(cols))
                        row[c * l.stride[1]] = T(1);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(Eye, EyeImpl);
}  // namespace neomeg::dnn::x86
