// Argmax and Argmin on x86: float32 through argmax_hwy.cpp (strided tensors through dense copies),
// outer rows split across OpenMP threads in chunks of at least kParallelGrain source elements.
// Other dtypes and an empty axis go to naive.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"
#include "src/x86/argmax_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

template <class Op, bool kFindMax>
class ArgImpl final : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorLayout &src = inputs[0].layout, &dst = outputs[0].layout;
        size_t axis = 0;
        if (src.dtype != dtype::Float32 || !normalize_axis(this->m_param.axis, src.ndim, axis) ||
            src[axis] == 0 || src.is_empty()) {
            this->run_naive(inputs, outputs, ws);
            return;
        }
        if (src.is_contiguous() && dst.is_contiguous()) {
            run_dense(inputs[0], outputs[0], axis);
            this->m_last = "hwy";
            return;
        }
        // A strided view (a slice or a reversed batch, which basic indexing returns) as Reduce's.
        through_dense_copies(inputs[0], outputs[0],
                             [&](const TensorND& s, const TensorND& d) { run_dense(s, d, axis); });
        this->m_last = "hwy:copied";
    }

private:
    // src and dst contiguous, src not empty.
    void run_dense(const TensorND& src_nd, const TensorND& dst_nd, size_t axis) const {
        const TensorLayout& src = src_nd.layout;
        size_t outer = 1, inner = 1, n = src[axis];
        for (size_t d = 0; d < axis; ++d)
            outer *= src[d];
        for (size_t d = axis + 1; d < src.ndim; ++d)
            inner *= src[d];
        const auto* s = static_cast<const float*>(src_nd.raw_ptr());
        auto* d = static_cast<int32_t*>(dst_nd.raw_ptr());
        parallel_ranges(outer, outer * n * inner, kParallelGrain, [&](size_t b, size_t e) {
            arg_extreme_f32(kFindMax, s, d, b, e, n, inner);
        });
    }
};

using ArgmaxImpl = ArgImpl<Argmax, true>;
using ArgminImpl = ArgImpl<Argmin, false>;

}  // namespace
NM_REGISTER_X86(Argmax, ArgmaxImpl);
NM_REGISTER_X86(Argmin, ArgminImpl);
}  // namespace neomeg::dnn::x86
