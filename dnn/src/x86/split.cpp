// Split on x86: each dst receives its slab of src through relayout_copy (rows, tiles or strided
// walks, threaded when large). The copy is raw, so NaN payloads pass unchanged where naive's
// element conversion would make them quiet.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

class SplitImpl final : public LoopKernel<Split> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND& src = inputs[0];
        auto ndim = static_cast<int32_t>(src.layout.ndim);
        auto axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
        size_t start = 0;
        for (const TensorND& dst : outputs) {
            size_t len = dst.layout.shape[axis];
            if (!relayout_copy(slab(src, axis, start, len), dst)) {
                run_naive(inputs, outputs, ws);  // rewrites every dst element
                return;
            }
            start += len;
        }
        m_last = "copy";
    }
};

}  // namespace
NM_REGISTER_X86(Split, SplitImpl);
}  // namespace neomeg::dnn::x86
