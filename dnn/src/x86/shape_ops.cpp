// ReshapeTo and BroadcastTo on x86: after naive's check that the shape value still says what dst
// was given, both are an element copy through relayout_copy (rows, tiles or strided walks,
// threaded when large) instead of naive's element-by-element walk. ReshapeTo views whichever side
// is contiguous with the other's shape (its row-major order is the same memory); when neither is,
// naive copies. BroadcastTo copies src viewed with stride 0 along the broadcast axes.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

int32_t int_at(const TensorND& t, size_t i) {
    return static_cast<const int32_t*>(t.raw_ptr())[static_cast<ptrdiff_t>(i) * t.layout.stride[0]];
}

class ReshapeToImpl final : public LoopKernel<ReshapeTo> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &shape = inputs[1], &dst = outputs[0];
        for (size_t i = 0; i < dst.layout.ndim; ++i) {
            int32_t v = int_at(shape, i);
            NM_REQUIRE(ShapeError, v == -1 || size_t(v) == dst.layout.shape[i], "shape holds ", v,
                       " at ", i, " but dst is ", dst.layout.to_string());
        }
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
        const TensorND &src = inputs[0], &shape = inputs[1], &dst = outputs[0];
        for (size_t i = 0; i < dst.layout.ndim; ++i)
            NM_REQUIRE(ShapeError, int_at(shape, i) == int64_t(dst.layout.shape[i]), "shape holds ",
                       int_at(shape, i), " at ", i, " but dst is ", dst.layout.to_string());
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
