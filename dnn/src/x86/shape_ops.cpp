// ReshapeTo and BroadcastTo on x86: after the check that the shape value still says what dst
// was given (preset_shape.h), both are an element copy through relayout_copy (rows, tiles or
// strided walks, threaded when large) instead of naive's element-by-element walk. ReshapeTo views
// whichever side is contiguous with the other's shape (its row-major order is the same memory);
// when neither is, naive copies. BroadcastTo copies src viewed with stride 0 along the broadcast
// axes.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/preset_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

class ReshapeToImpl final : public LoopKernel<ReshapeTo> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        check_preset_shape(kType, inputs[1], dst.layout);
        const char* kernel = nullptr;
        if (src.layout.is_contiguous())
            kernel = relayout_copy(
                    TensorND(src.raw_ptr(), TensorLayout(dst.layout, src.layout.dtype)), dst);
        else if (dst.layout.is_contiguous())
            kernel = relayout_copy(
                    src, TensorND(dst.raw_ptr(), TensorLayout(src.layout, dst.layout.dtype)));
        if (!kernel)
            return run_naive(inputs, outputs, ws);
        m_last = kernel;
    }
};

class BroadcastToImpl final : public LoopKernel<BroadcastTo> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        check_preset_shape(kType, inputs[1], dst.layout);
        // src as a view of dst's shape: stride 0 along broadcast axes.
        TensorLayout view = dst.layout;
        view.dtype = src.layout.dtype;
        size_t lead = dst.layout.ndim - src.layout.ndim;
        for (size_t i = 0; i < dst.layout.ndim; ++i)
            view.stride[i] =
                    i < lead || src.layout.shape[i - lead] == 1 ? 0 : src.layout.stride[i - lead];
        const char* kernel = relayout_copy(TensorND(src.raw_ptr(), view), dst);
        if (!kernel)
            return run_naive(inputs, outputs, ws);
        m_last = kernel;
    }
};

}  // namespace
NM_REGISTER_X86(ReshapeTo, ReshapeToImpl);
NM_REGISTER_X86(BroadcastTo, BroadcastToImpl);
}  // namespace neomeg::dnn::x86
