// CondTake on x86: the elements of data where mask is true, in row-major order, with their flat
// indices; every dtype and any strides, split across threads by compact_chunks (count, then
// write). Writes only the first `count` outputs, as naive does.
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/compact_chunks.h"
#include "src/x86/flat_runs.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {
namespace {

class CondTakeImpl final : public LoopKernel<CondTake> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &data = inputs[0], &mask = inputs[1];
        const TensorND &values = outputs[0], &indices = outputs[1];
        const TensorLayout &dl = data.layout, &ml = mask.layout;
        m_last = "loop";
        size_t total = dl.total_nr_elems(), kept = 0;
        if (total > 0) {
            // A 0-d tensor is one row of one element.
            size_t outer = dl.ndim == 0 ? 0 : dl.ndim - 1, n = dl.ndim == 0 ? 1 : dl[outer];
            ptrdiff_t ds = dl.ndim == 0 ? 0 : dl.stride[outer],
                      ms = ml.ndim == 0 ? 0 : ml.stride[outer];
            ptrdiff_t vs = values.layout.stride[0], is = indices.layout.stride[0];
            const auto* m = static_cast<const dt_bool*>(mask.raw_ptr());
            auto* idx = static_cast<dt_int32*>(indices.raw_ptr());
            dispatch_dtype(dl.dtype, [&](auto tag) {
                using T = typename decltype(tag)::type;
                const T* d = static_cast<const T*>(data.raw_ptr());
                T* v = static_cast<T*>(values.raw_ptr());
                auto count = [&](size_t b, size_t e) {
                    size_t c = 0;
                    for_each_flat_run(n, b, e, [&](size_t row, size_t i0, size_t i1, size_t) {
                        const dt_bool* mr = m + row_offset(ml, outer, row);
                        for (size_t i = i0; i < i1; ++i)
                            c += mr[static_cast<ptrdiff_t>(i) * ms] ? 1 : 0;
                    });
                    return c;
                };
                auto write = [&](size_t b, size_t e, size_t first) {
                    auto k = static_cast<ptrdiff_t>(first);
                    for_each_flat_run(n, b, e, [&](size_t row, size_t i0, size_t i1, size_t flat) {
                        const dt_bool* mr = m + row_offset(ml, outer, row);
                        const T* dr = d + row_offset(dl, outer, row);
                        for (size_t i = i0; i < i1; ++i) {
                            auto p = static_cast<ptrdiff_t>(i);
                            if (!mr[p * ms])
                                continue;
                            v[k * vs] = dr[p * ds];
                            idx[k * is] = static_cast<dt_int32>(flat + (i - i0));
                            ++k;
                        }
                    });
                    return static_cast<size_t>(k) - first;
                };
                kept = compact_chunks(total, count, write);
            });
        }
        *static_cast<dt_int32*>(outputs[2].raw_ptr()) = static_cast<dt_int32>(kept);
    }
};

}  // namespace
NM_REGISTER_X86(CondTake, CondTakeImpl);
}  // namespace neomeg::dnn::x86
