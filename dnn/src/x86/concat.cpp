// Concat on x86: each src copied into its slab of dst by relayout_copy (rows, tiles or strided
// walks, threaded when large). The copy is raw, so NaN payloads pass unchanged where naive's
// element conversion would make them quiet.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

class ConcatImpl final : public LoopKernel<Concat> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND& dst = outputs[0];
        auto ndim = static_cast<int32_t>(dst.layout.ndim);
        auto axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
        size_t start = 0;
        for (const TensorND& src : inputs) {
            size_t len = src.layout.shape[axis];
            if (!relayout_copy(src, slab(dst, axis, start, len))) {
                run_naive(inputs, outputs, ws);  // rewrites every dst element
                return;
            }
            start += len;
        }
        m_last = "copy";
    }
};

}  // namespace
NM_REGISTER_X86(Concat, ConcatImpl);
}  // namespace neomeg::dnn::x86
