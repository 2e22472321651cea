// MatrixMul and BatchedMatrixMul through oneDNN's matmul, float32. A transposed operand is the
// same memory described with its last two axes swapped, so no transpose is ever copied; strided
// operands are described as they are, and staged dense only when oneDNN would otherwise fall to
// its reference implementation (no unit stride in a matrix, a column-major C) or cannot address
// them at all (broadcast or reversed views).
#include "src/x86/kernel.h"

namespace neomeg::dnn::x86 {
namespace {

// The primitive's view of an operand: its (batch,) rows, cols axes, the last two swapped when
// the operand is given transposed.
std::optional<memory::desc> matmul_desc(const TensorLayout& l, bool transposed) {
    memory::dims dims = dims_of(l), strides = strides_of(l);
    if (transposed) {
        std::swap(dims[l.ndim - 2], dims[l.ndim - 1]);
        std::swap(strides[l.ndim - 2], strides[l.ndim - 1]);
    }
    return plain_desc(dims, strides);
}

std::unique_ptr<PrimitivePlan> plan_matmul(HandleImpl& handle, const TensorLayout& a,
                                           const TensorLayout& b, const TensorLayout& c,
                                           bool trans_a, bool trans_b) {
    if (a.dtype != dtype::Float32 || b.dtype != dtype::Float32 || c.dtype != dtype::Float32)
        return nullptr;
    // An empty product (M, N or batch 0) has nothing to compute and K = 0 means C = 0; oneDNN
    // takes neither, naive does both.
    if (a.is_empty() || b.is_empty() || c.is_empty())
        return nullptr;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    for (bool stage : {false, true}) {
        auto oa = Operand::of(a, stage,
                              [&](const TensorLayout& l) { return matmul_desc(l, trans_a); });
        auto ob = Operand::of(b, stage,
                              [&](const TensorLayout& l) { return matmul_desc(l, trans_b); });
        auto oc =
                Operand::of(c, stage, [&](const TensorLayout& l) { return matmul_desc(l, false); });
        dnnl::matmul::desc desc(oa.user_desc(), ob.user_desc(), oc.user_desc());
        dnnl::matmul::primitive_desc pd(desc, attr, handle.engine());
        std::string_view impl = pd.impl_info_str();
        if (!stage && is_reference_impl(impl))
            continue;
        auto plan = std::make_unique<PrimitivePlan>(dnnl::matmul(pd), pd, handle.engine(), impl);
        plan->add(DNNL_ARG_SRC, std::move(oa), pd.src_desc(), false);
        plan->add(DNNL_ARG_WEIGHTS, std::move(ob), pd.weights_desc(), false);
        plan->add(DNNL_ARG_DST, std::move(oc), pd.dst_desc(), true);
        plan->finalize();
        return plan;
    }
    return nullptr;
}

template <class Op>
class MatmulImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return plan_matmul(this->x86_handle(), in[0], in[1], out[0], this->m_param.transposeA,
                           this->m_param.transposeB);
    }
};

}  // namespace
NM_REGISTER_X86(MatrixMul, MatmulImpl<MatrixMul>);
NM_REGISTER_X86(BatchedMatrixMul, MatmulImpl<BatchedMatrixMul>);
}  // namespace neomeg::dnn::x86
