// Roll on x86, one pass over dst. A contiguous src into a contiguous dst goes row by row
// (row_runs.h): a row spans the last rolled axis and the axes inside it, put together from the two
// runs of the src row that the roll swaps; rolled outer axes only change which src row it reads.
// Other layouts copy each combination of halves of the rolled axes (two per axis) as a view of src
// into a view of dst with relayout_copy, which takes any strides. Elements move as raw values.
#include "src/common/roll.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/row_runs.h"

namespace neomeg::dnn::x86 {
namespace {

using Shifts = std::array<size_t, TensorLayout::MAX_NDIM>;

// Copies the pieces of src that land in dst, splitting along the rolled axes from `axis` on;
// false where relayout_copy cannot move the dtype.
bool copy_pieces(const TensorND& s, const TensorND& d, const Shifts& k, size_t axis) {
    while (axis < s.layout.ndim && k[axis] == 0)
        ++axis;
    if (axis == s.layout.ndim)
        return relayout_copy(s, d) != nullptr;
    size_t n = s.layout.shape[axis], kk = k[axis];
    return copy_pieces(slab(s, axis, n - kk, kk), slab(d, axis, 0, kk), k, axis + 1) &&
           copy_pieces(slab(s, axis, 0, n - kk), slab(d, axis, kk, n - kk), k, axis + 1);
}

// src and dst contiguous; `last` is the innermost axis with a nonzero shift.
void roll_rows(const TensorND& src, const TensorND& dst, const Shifts& k, size_t last) {
    const TensorLayout& l = src.layout;
    size_t inner = l.dtype.size(), rows = 1;
    for (size_t d = last + 1; d < l.ndim; ++d)
        inner *= l.shape[d];
    for (size_t d = 0; d < last; ++d)
        rows *= l.shape[d];
    size_t n = l.shape[last], kk = k[last], row_bytes = n * inner;
    const auto* s = static_cast<const std::byte*>(src.raw_ptr());
    const RowRun runs[2] = {{s + (n - kk) * inner, row_bytes, 0, kk * inner},
                            {s, row_bytes, kk * inner, (n - kk) * inner}};
    auto* d = static_cast<std::byte*>(dst.raw_ptr());
    bool outer_rolled = false;
    for (size_t a = 0; a < last; ++a)
        outer_rolled = outer_rolled || k[a] != 0;
    if (!outer_rolled) {
        copy_row_runs(runs, rows, row_bytes, d, [](size_t r) { return r; });
        return;
    }
    copy_row_runs(runs, rows, row_bytes, d, [&](size_t r) {
        size_t from = 0, scale = 1;
        for (size_t a = last; a-- > 0;) {
            size_t na = l.shape[a], i = r % na;
            r /= na;
            from += (i + na - k[a]) % na * scale;
            scale *= na;
        }
        return from;
    });
}

class RollImpl final : public LoopKernel<Roll> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const Shifts k = roll_shifts(m_param, src.layout);
        size_t last = src.layout.ndim;
        for (size_t a = 0; a < src.layout.ndim; ++a)
            if (k[a] != 0)
                last = a;
        if (last < src.layout.ndim && src.layout.is_contiguous() && dst.layout.is_contiguous() &&
            !src.layout.is_empty()) {
            roll_rows(src, dst, k, last);
            m_last = "rows";
            return;
        }
        if (!copy_pieces(src, dst, k, 0)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "copy";
    }
};

}  // namespace
NM_REGISTER_X86(Roll, RollImpl);
}  // namespace neomeg::dnn::x86
