// MatrixMul and BatchedMatrixMul through oneDNN's matmul: float32, bfloat16 and float16 (the
// 16-bit products accumulate in float32 inside oneDNN). A transposed operand is the same memory
// described with its last two axes swapped, so no transpose is ever copied; strided operands are
// described as they are, and staged dense only when oneDNN would otherwise fall to its reference
// implementation (no unit stride in a matrix, a column-major C) or cannot address them at all
// (broadcast or reversed views). A 16-bit product oneDNN has no fast kernel for on this CPU
// (float16 in oneDNN 2.6, bfloat16 without AVX-512) runs as a float32 matmul between our
// vectorised conversions (lowp_plan.h; oneDNN 2.6's float16 reorders are scalar and slow).
// int8 operands (Int8, QuantizedS8) run our exact integer GEMM (matmul_int8.h).
#include <algorithm>
#include <string>

#include "neomeg/dnn/operators/linalg.h"
#include "src/x86/kernel.h"
#include "src/x86/matmul_int8.h"
#include "src/x86/small_matmul.h"

namespace neomeg::dnn::x86 {
namespace {

// The primitive's view of an operand: its (batch,) rows, cols axes, the last two swapped when
// the operand is given transposed.
std::optional<memory::data_type> dnnl_dtype(DType dt) {
    if (dt == dtype::Float32)
        return memory::data_type::f32;
    if (dt == dtype::BFloat16)
        return memory::data_type::bf16;
    if (dt == dtype::Float16)
        return memory::data_type::f16;
    return std::nullopt;
}

std::optional<memory::desc> matmul_desc(const TensorLayout& l, bool transposed) {
    memory::dims dims = dims_of(l), strides = strides_of(l);
    if (transposed) {
        std::swap(dims[l.ndim - 2], dims[l.ndim - 1]);
        std::swap(strides[l.ndim - 2], strides[l.ndim - 1]);
    }
    return plain_desc(dims, strides, *dnnl_dtype(l.dtype));
}

// How a plan computes: on the operands as they are described, or staged dense.
enum class Attempt { kDirect, kStaged };

std::unique_ptr<PrimitivePlan> plan_matmul(HandleImpl& handle, const TensorLayout& a,
                                           const TensorLayout& b, const TensorLayout& c,
                                           bool trans_a, bool trans_b) {
    auto dt = dnnl_dtype(a.dtype);
    if (!dt || b.dtype != a.dtype || c.dtype != a.dtype)
        return nullptr;
    // An empty product (M, N or batch 0) has nothing to compute and K = 0 means C = 0; oneDNN
    // takes neither, naive does both.
    if (a.is_empty() || b.is_empty() || c.is_empty())
        return nullptr;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    bool low = *dt != memory::data_type::f32;
    for (Attempt attempt : {Attempt::kDirect, Attempt::kStaged}) {
        bool stage = attempt != Attempt::kDirect;
        auto oa = Operand::of(a, stage,
                              [&](const TensorLayout& l) { return matmul_desc(l, trans_a); });
        auto ob = Operand::of(b, stage,
                              [&](const TensorLayout& l) { return matmul_desc(l, trans_b); });
        auto oc =
                Operand::of(c, stage, [&](const TensorLayout& l) { return matmul_desc(l, false); });
        dnnl::matmul::desc desc(oa.user_desc(), ob.user_desc(), oc.user_desc());
        std::optional<dnnl::matmul::primitive_desc> pd;
        try {
            pd.emplace(desc, attr, handle.engine());
        } catch (const dnnl::error&) {
            continue;  // no implementation of this dtype at all: lowp_in_float32 converts
        }
        std::string impl = pd->impl_info_str();
        // A 16-bit product's reference kernel loses to the float32 one between conversions.
        if (is_reference_impl(impl) && (attempt == Attempt::kDirect || low))
            continue;
        auto plan = std::make_unique<PrimitivePlan>(dnnl::matmul(*pd), *pd, handle.engine(), impl);
        plan->add(DNNL_ARG_SRC, std::move(oa), pd->src_desc(), false);
        plan->add(DNNL_ARG_WEIGHTS, std::move(ob), pd->weights_desc(), false);
        plan->add(DNNL_ARG_DST, std::move(oc), pd->dst_desc(), true);
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
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (auto int8 = int8_matmul_plan(in[0], in[1], out[0], this->m_param.transposeA,
                                         this->m_param.transposeB))
            return int8;
        if (auto small = small_matmul_plan(in[0], in[1], out[0], this->m_param.transposeA,
                                           this->m_param.transposeB))
            return small;
        return plan_matmul(this->x86_handle(), in[0], in[1], out[0], this->m_param.transposeA,
                           this->m_param.transposeB);
    }
};

}  // namespace
NM_REGISTER_X86(MatrixMul, MatmulImpl<MatrixMul>);
NM_REGISTER_X86(BatchedMatrixMul, MatmulImpl<BatchedMatrixMul>);
}  // namespace neomeg::dnn::x86
