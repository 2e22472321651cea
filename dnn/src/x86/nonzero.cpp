// NonZero on x86: the coordinates of the nonzero elements of src in row-major order (-0.0 counts
// as zero and NaN as nonzero, as naive compares), every dtype and any strides, split across
// threads by compact_chunks (count, then write). Writes only the first `count` columns of coords,
// as naive does.
#include <array>

#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/compact_chunks.h"
#include "src/x86/flat_runs.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {
namespace {

template <class T>
bool nonzero(T v) {
    using C = compute_type_t<T>;
    return static_cast<C>(v) != C(0);
}

class NonZeroImpl final : public LoopKernel<NonZero> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &coords = outputs[0];
        const TensorLayout &sl = src.layout, &cl = coords.layout;
        m_last = "loop";
        size_t total = sl.total_nr_elems(), kept = 0;
        if (total > 0 && sl.ndim > 0) {
            size_t outer = sl.ndim - 1, n = sl[outer];
            ptrdiff_t ss = sl.stride[outer];
            auto* c = static_cast<dt_int32*>(coords.raw_ptr());
            dispatch_dtype(sl.dtype, [&](auto tag) {
                using T = typename decltype(tag)::type;
                const T* s = static_cast<const T*>(src.raw_ptr());
                auto count = [&](size_t b, size_t e) {
                    size_t k = 0;
                    for_each_flat_run(n, b, e, [&](size_t row, size_t i0, size_t i1, size_t) {
                        const T* r = s + row_offset(sl, outer, row);
                        for (size_t i = i0; i < i1; ++i)
                            k += nonzero(r[static_cast<ptrdiff_t>(i) * ss]) ? 1 : 0;
                    });
                    return k;
                };
                auto write = [&](size_t b, size_t e, size_t first) {
                    auto k = static_cast<ptrdiff_t>(first);
                    for_each_flat_run(n, b, e, [&](size_t row, size_t i0, size_t i1, size_t) {
                        const T* r = s + row_offset(sl, outer, row);
                        // The row's coordinates over the outer axes, written per element found.
                        std::array<dt_int32, TensorLayout::MAX_NDIM> at{};
                        for (size_t d = outer, rem = row; d-- > 0;) {
                            at[d] = static_cast<dt_int32>(rem % sl[d]);
                            rem /= sl[d];
                        }
                        for (size_t i = i0; i < i1; ++i) {
                            if (!nonzero(r[static_cast<ptrdiff_t>(i) * ss]))
                                continue;
                            at[outer] = static_cast<dt_int32>(i);
                            for (size_t d = 0; d <= outer; ++d)
                                c[static_cast<ptrdiff_t>(d) * cl.stride[0] + k * cl.stride[1]] =
                                        at[d];
                            ++k;
                        }
                    });
                    return static_cast<size_t>(k) - first;
                };
                kept = compact_chunks(total, count, write);
            });
        }
        *static_cast<dt_int32*>(outputs[1].raw_ptr()) = static_cast<dt_int32>(kept);
    }
};

}  // namespace
NM_REGISTER_X86(NonZero, NonZeroImpl);
}  // namespace neomeg::dnn::x86
