// Elemwise on x86: the modes and dtypes that elemwise_hwy.cpp and elemwise_int_hwy.cpp vectorise
// (float32, int32, comparisons into bool, logical bool, COND over 32-bit data) and, through
// float32, the float modes on float16 and bfloat16 (elemwise_lowp.cpp), for any layouts
// that split into rows whose every operand is either dense (unit stride) or one broadcast value
// along the row: same-shape contiguous tensors (one row), scalars, row and column broadcasts, a
// per-channel (1, C, 1, 1) operand over NCHW, padded or reversed rows of the outer axes. Rows are
// walked with each operand's own strides over the outer axes. Large tensors split across OpenMP
// threads in chunks of at least kParallelGrain elements, so small ones stay on the calling thread.
// Other dtypes and modes, and layouts without a unit-stride run (a transposed operand), go to
// naive.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "src/x86/dense_rows.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_lowp.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {
namespace {

// Elements [begin, end) of dst in row-major order, run by run; lowp: the 16-bit float kernels.
void run_range(elemwise::Mode mode, DType data, bool lowp, const Rows& r,
               std::span<const TensorND> in, const TensorND& out, size_t begin, size_t end) {
    size_t n_in = r.operands - 1;
    std::array<ElemwiseSrc, kMaxOperands> src;
    for_each_run(r, begin, end, [&](std::span<const ptrdiff_t> off, size_t n) {
        for (size_t i = 0; i < n_in; ++i)
            src[i] = {element_at(in[i].raw_ptr(), off[i], r.elem_size[i]), r.broadcast[i]};
        void* dst = element_at(out.raw_ptr(), off[n_in], r.elem_size[n_in]);
        if (lowp)
            elemwise_lowp_run(mode, data, src.data(), dst, n);
        else
            elemwise_run(mode, data, out.layout.dtype, src.data(), dst, n);
    });
}

class ElemwiseImpl final : public LoopKernel<Elemwise> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        DType data = inputs[elemwise::data_input(m_param.mode)].layout.dtype;
        if (auto rows = plan(inputs, outputs[0])) {
            bool lowp = elemwise_lowp_supported(m_param.mode, data, outputs[0].layout.dtype);
            parallel_for_rows(*rows, [&](size_t b, size_t e) {
                run_range(m_param.mode, data, lowp, *rows, inputs, outputs[0], b, e);
            });
            m_last = m_target.c_str();
            return;
        }
        run_naive(inputs, outputs, ws);
    }

private:
    std::optional<Rows> plan(std::span<const TensorND> inputs, const TensorND& dst) {
        DType data = inputs[elemwise::data_input(m_param.mode)].layout.dtype;
        if (!elemwise_supported(m_param.mode, data, dst.layout.dtype) &&
            !elemwise_lowp_supported(m_param.mode, data, dst.layout.dtype))
            return std::nullopt;
        std::array<TensorLayout, kMaxOperands> layouts;
        for (size_t i = 0; i < inputs.size(); ++i) {
            // COND's condition is bool; every other input is of the data dtype.
            DType want = i < elemwise::data_input(m_param.mode) ? DType(dtype::Bool) : data;
            if (inputs[i].layout.dtype != want)
                return std::nullopt;
            layouts[i] = inputs[i].layout.broadcast(dst.layout);
        }
        layouts[inputs.size()] = dst.layout;
        if (dst.layout.is_empty())
            return std::nullopt;
        auto rows = rows_of(std::span(layouts).first(inputs.size() + 1));
        if (rows && !m_target_known) {
            m_target = str_cat("hwy:", elemwise_target());
            m_target_known = true;
        }
        return rows;
    }

    std::string m_target;
    bool m_target_known = false;
};

}  // namespace
NM_REGISTER_X86(Elemwise, ElemwiseImpl);
}  // namespace neomeg::dnn::x86
