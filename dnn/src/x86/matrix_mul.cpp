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
#include "src/x86/conv_common.h"
#include "src/x86/kernel.h"
#include "src/x86/matmul_int8.h"
#include "src/x86/small_matmul.h"

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
    return plain_desc(dims, strides, *dnnl_type_of(l.dtype));
}

// oneDNN 2.6's AVX2 sgemm packs an operand stored K-major (A given transposed, B not: k walks its
// rows) by reading down its rows; where the row pitch is a multiple of 128 floats the rows share a
// few L1 sets and the packing stalls on misses. Measured on Zen 3 at one thread, a product with
// such an operand ran 1.05-1.1x slower at pitches 256-768, 1.4-1.5x at 512 and 1536, 2-2.3x at
// 1024 and 2048 (a Linear layer's weight gradient, x^T dy, at 40 GFLOPS against 90), and the same
// product on a copy with the pitch 16 floats longer at full speed. The copy (a reorder into the
// padded layout) costs one pass over the operand against `other` (M for B, N for A) passes of
// the product's, so it pays where the penalty outweighs it: `other` >= 8 at pitches of a multiple
// of 1024, >= 32 at other multiples of 512, >= 256 at other multiples of 128 from 256 (below
// those it was measured slower or even). AVX-512's kernels were not measured: left alone there.
// See x86-backend-log.md, *sgemm operands with a power-of-two row pitch*.
constexpr memory::dim kPitchPad = 16;

memory::dim min_other_for_pitch(memory::dim pitch) {
    if (pitch % 1024 == 0)
        return 8;
    if (pitch % 512 == 0)
        return 32;
    if (pitch % 128 == 0 && pitch >= 256)
        return 256;
    return 0;  // no penalty measured: never padded
}

// B read along its rows (given transposed, stored (N, K)) at a pitch of a multiple of 1024 floats
// cost 4-6% when N was at most 256 (a Linear layer's forward to 256 or fewer features), measured
// at M >= 512 with the copy; more columns, or fewer rows (M of 64 and 128 lost), gained nothing.
constexpr memory::dim kRowMajorBMaxN = 256, kRowMajorBMinM = 512;

// The primitive's layout for operand `md` (A, or B where `is_b`; its dims as the primitive sees
// them, after matmul_desc's swap): the same dims with a padded row pitch where the rules above
// pay, else nullopt (the operand's own layout). `other` is M for B, N for A.
std::optional<memory::desc> padded_operand(const memory::desc& md, bool is_b, memory::dim other) {
    if (md.data.data_type != dnnl_f32 || has_avx512_core())
        return std::nullopt;
    const int n = md.data.ndims;
    const memory::dim* dims = md.data.dims;
    const memory::dim* strides = md.data.format_desc.blocking.strides;
    // The axis its rows run along in memory (unit stride) and the one its pitch steps along.
    int unit_axis = n - 1, pitch_axis = n - 2;
    if (strides[n - 1] != 1 || dims[n - 2] < 2)
        std::swap(unit_axis, pitch_axis);
    if (strides[unit_axis] != 1 || dims[pitch_axis] < 2)
        return std::nullopt;
    const memory::dim pitch = strides[pitch_axis];
    const bool k_major = pitch_axis == (is_b ? n - 2 : n - 1);
    if (k_major) {
        const memory::dim min_other = min_other_for_pitch(pitch);
        if (!min_other || other < min_other)
            return std::nullopt;
    } else if (!is_b || pitch % 1024 || dims[n - 1] > kRowMajorBMaxN || other < kRowMajorBMinM) {
        return std::nullopt;
    }
    memory::dims padded(n);
    padded[unit_axis] = 1;
    padded[pitch_axis] = dims[unit_axis] + kPitchPad;
    memory::dim inner = dims[pitch_axis] * padded[pitch_axis];
    for (int i = n - 3; i >= 0; --i) {
        padded[i] = inner;
        inner *= dims[i];
    }
    return plain_desc(memory::dims(dims, dims + n), padded, memory::data_type::f32);
}

// How a plan computes: on the operands as they are described, or staged dense.
enum class Attempt { kDirect, kStaged };

std::unique_ptr<PrimitivePlan> plan_matmul(HandleImpl& handle, const TensorLayout& a,
                                           const TensorLayout& b, const TensorLayout& c,
                                           bool trans_a, bool trans_b) {
    auto dt = dnnl_type_of(a.dtype);
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
        const int nd = oc.user_desc().data.ndims;
        auto pa = padded_operand(oa.user_desc(), false, oc.user_desc().data.dims[nd - 1]);
        auto pb = padded_operand(ob.user_desc(), true, oc.user_desc().data.dims[nd - 2]);
        dnnl::matmul::desc desc(pa ? *pa : oa.user_desc(), pb ? *pb : ob.user_desc(),
                                oc.user_desc());
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
        if (pa || pb)
            impl += ":padded";  // NEOMEG_DEBUG shows that the operands were copied first
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
