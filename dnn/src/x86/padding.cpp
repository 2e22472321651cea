// Padding and PaddingBackward on x86 in CONSTANT mode for float32: the forward fills dst with the
// border value and copies src into dst's interior view, the backward copies diff's interior view
// into grad, both through relayout_copy (rows, tiles or strided walks, threaded when large). The
// interior is a view of dst (or diff) offset by the front widths, so any strides work. REFLECT and
// REPLICATE (whose backward accumulates), and other dtypes, go to naive.
#include <algorithm>

#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

// The view of the padded tensor t that holds the unpadded elements: src's (or grad's) shape,
// starting at the front widths.
TensorND interior(const TensorND& t, const TensorLayout& inner, const param::Padding& p) {
    TensorND v = t;
    for (size_t d = 0; d < t.layout.ndim; ++d)
        v = slab(v, d, static_cast<size_t>(p.front_offsets[d]), inner.shape[d]);
    return v;
}

bool handles(const param::Padding& p, DType dt) {
    return p.mode == param::Padding::Mode::CONSTANT && dt == dtype::Float32;
}

class PaddingImpl final : public LoopKernel<Padding> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        if (!handles(m_param, src.layout.dtype) || !dst.layout.is_contiguous()) {
            run_naive(inputs, outputs, ws);
            return;
        }
        auto* d = static_cast<float*>(dst.raw_ptr());
        size_t n = dst.layout.total_nr_elems();
        const float value = m_param.value;
        parallel_ranges(n, n, kParallelGrain,
                        [&](size_t b, size_t e) { std::fill(d + b, d + e, value); });
        if (!src.layout.is_empty())
            (void)relayout_copy(src, interior(dst, src.layout, m_param));
        m_last = "copy";
    }
};

class PaddingBackwardImpl final : public LoopKernel<PaddingBackward> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &diff = inputs[0], &grad = outputs[0];
        if (!handles(m_param, diff.layout.dtype)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        if (!grad.layout.is_empty())
            (void)relayout_copy(interior(diff, grad.layout, m_param), grad);
        m_last = "copy";
    }
};

}  // namespace
NM_REGISTER_X86(Padding, PaddingImpl);
NM_REGISTER_X86(PaddingBackward, PaddingBackwardImpl);
}  // namespace neomeg::dnn::x86
