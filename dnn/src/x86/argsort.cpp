// Argsort on x86: every dtype naive takes and any strides, each line's keys (sort_keys.h) sorted
// by vqsort, lines split across OpenMP threads. The keys make it naive's order, so values
// and indices match naive exactly, ties and NaNs included.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/sort_keys.h"

namespace neomeg::dnn::x86 {
namespace {

class ArgsortImpl final : public LoopKernel<Argsort> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &values = outputs[0], &indices = outputs[1];
        size_t outer = src.layout.ndim - 1, n = src.layout[outer];
        size_t rows = src.layout.total_nr_elems() / std::max<size_t>(n, 1);
        ptrdiff_t ss = src.layout.stride[outer], vs = values.layout.stride[outer],
                  is = indices.layout.stride[outer];
        bool descending = m_param.order == Param::Order::DESCENDING;
        uint32_t flip = rank_flip(descending);
        m_last = "vqsort";
        if (n == 0)
            return;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* v = static_cast<T*>(values.raw_ptr());
            auto* idx = static_cast<dt_int32*>(indices.raw_ptr());
            for_each_sort_row(rows, n, [&](size_t r, uint64_t* keys) {
                const T* line = s + row_offset(src.layout, outer, r);
                T* vl = v + row_offset(values.layout, outer, r);
                dt_int32* il = idx + row_offset(indices.layout, outer, r);
                make_sort_keys(line, ss, n, descending, keys);
                sort_keys(keys, n);
                for (size_t i = 0; i < n; ++i) {
                    uint32_t p = key_position(keys[i], flip);
                    auto o = static_cast<ptrdiff_t>(i);
                    vl[o * vs] = line[static_cast<ptrdiff_t>(p) * ss];
                    il[o * is] = static_cast<dt_int32>(p);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(Argsort, ArgsortImpl);
}  // namespace neomeg::dnn::x86
