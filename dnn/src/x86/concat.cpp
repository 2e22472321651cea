// Concat on x86. Contiguous inputs into a contiguous dst go row by row (row_runs.h): each dst row
// (the axes from `axis` in) is put together from a row of every input in one sweep over dst, where
// a copy per input swept it once per input. Other layouts copy each src into its slab of dst by
// relayout_copy (rows, tiles or strided walks, threaded when large). The copy is raw, so NaN
// payloads pass unchanged where naive's element conversion would make them quiet.
#include <vector>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/row_runs.h"

namespace neomeg::dnn::x86 {
namespace {

// The row-by-row copy and the kernel's name ("rows", or "rows streamed" where dst was written with
// non-temporal stores), or nullptr (nothing written) where a layout is not contiguous.
const char* concat_rows(std::span<const TensorND> inputs, const TensorND& dst, size_t axis) {
    if (!dst.layout.is_contiguous())
        return nullptr;
    size_t rows = 1, inner = dst.layout.dtype.size();
    for (size_t d = 0; d < axis; ++d)
        rows *= dst.layout.shape[d];
    for (size_t d = axis + 1; d < dst.layout.ndim; ++d)
        inner *= dst.layout.shape[d];
    std::vector<RowRun> runs;
    runs.reserve(inputs.size());
    size_t off = 0;
    for (const TensorND& src : inputs) {
        size_t bytes = src.layout.shape[axis] * inner;
        if (bytes == 0)
            continue;
        if (!src.layout.is_contiguous())
            return nullptr;
        runs.push_back({static_cast<const std::byte*>(src.raw_ptr()), bytes, off, bytes});
        off += bytes;
    }
    if (off > 0 && copy_row_runs(runs, rows, off, static_cast<std::byte*>(dst.raw_ptr()),
                                 [](size_t r) { return r; }))
        return "rows streamed";
    return "rows";
}

class ConcatImpl final : public LoopKernel<Concat> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND& dst = outputs[0];
        auto ndim = static_cast<int32_t>(dst.layout.ndim);
        auto axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
        if (const char* kernel = concat_rows(inputs, dst, axis)) {
            m_last = kernel;
            return;
        }
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
