// Diag on x86 (numpy.diag), every dtype and any strides: a 1-D src becomes a matrix whose rows
// are zeroed and given their element of the k-th diagonal (rows split across OpenMP threads); a
// 2-D src's k-th diagonal is copied out.
#include <algorithm>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class DiagImpl final : public LoopKernel<Diag> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const TensorLayout &sl = src.layout, &dl = dst.layout;
        const int64_t k = m_param.k;
        m_last = "loop";
        dispatch_dtype(sl.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* d = static_cast<T*>(dst.raw_ptr());
            if (sl.ndim == 1) {
                size_t n = dl[0];
                parallel_ranges(n, n * n, kParallelGrain, [&](size_t b, size_t e) {
                    for (size_t r = b; r < e; ++r) {
                        T* row = d + static_cast<ptrdiff_t>(r) * dl.stride[0];
                        for (size_t c = 0; c < n; ++c)
                            row[static_cast<ptrdiff_t>(c) * dl.stride[1]] = T(0);
                        // Row r holds src[min(r, c)] at column c = r + k, when that lies inside.
                        int64_t c = static_cast<int64_t>(r) + k;
                        if (c >= 0 && c < static_cast<int64_t>(n))
                            row[c * dl.stride[1]] =
                                    s[std::min(static_cast<int64_t>(r), c) * sl.stride[0]];
                    }
                });
                return;
            }
            // Element i of the diagonal is src[i, i + k] above the main diagonal, src[i - k, i]
            // below.
            const int64_t r0 = k >= 0 ? 0 : -k, c0 = k >= 0 ? k : 0;
            for (size_t i = 0; i < dl[0]; ++i) {
                auto ii = static_cast<int64_t>(i);
                d[ii * dl.stride[0]] = s[(r0 + ii) * sl.stride[0] + (c0 + ii) * sl.stride[1]];
            }
        });
    }
};

}  // namespace
NM_REGISTER_X86(Diag, DiagImpl);
}  // namespace neomeg::dnn::x86
