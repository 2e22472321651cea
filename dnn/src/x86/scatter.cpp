// Scatter on x86: dst = data (relayout_copy, unless dst is data's own view: an in-place update),
// then dst[i with axis ax replaced by index[i]] = src[i] (SET, any element size) or += src[i]
// (ADD, every numeric dtype, summed as naive sums: 16-bit floats in float and rounded back,
// integers wrapping in their own width), for i over index's shape. The walk puts ax innermost: two
// positions that write one dst element differ only along ax, so they fall in one row, visited in
// naive's order (the last SET wins, ADD sums in order), and rows split across OpenMP threads. Index
// values are checked first; any out of range sends the call to naive, which raises naive's error.
// Other cases go to naive.
#include <cstdint>
#include <type_traits>

#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/indexing.h"
#include "src/x86/gather_walk.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

// index's shape with ax moved last; "src" strides address dst (0 along ax, whose stride the index
// value multiplies), "dst" strides address Scatter's src, which is read.
GatherWalk walk_of(const TensorND& dst, const TensorND& index, const TensorND& src, size_t ax) {
    GatherWalk w;
    w.shape = index.layout;
    size_t n = index.layout.ndim, k = 0;
    auto put = [&](size_t d, bool indexed) {
        w.shape.shape[k] = index.layout.shape[d];
        w.src[k] = indexed ? 0 : dst.layout.stride[d];
        w.index[k] = index.layout.stride[d];
        w.dst[k] = src.layout.stride[d];
        ++k;
    };
    for (size_t d = 0; d < n; ++d)
        if (d != ax)
            put(d, false);
    put(ax, true);
    w.axis_stride = dst.layout.stride[ax];
    w.axis_size = static_cast<int64_t>(dst.layout.shape[ax]);
    return w;
}

// big[so + index * axis_stride] = op(that, small[dof]) over the walk, rows across threads.
template <class T, class Op>
void scatter_rows(const GatherWalk& w, void* big, const int32_t* index, const void* small, Op op) {
    auto* b = static_cast<T*>(big);
    const auto* s = static_cast<const T*>(small);
    size_t outer = outer_count(w);
    parallel_ranges(outer, w.shape.total_nr_elems(), kParallelGrain, [&](size_t lo, size_t hi) {
        walk(w, lo, hi, [&](ptrdiff_t so, ptrdiff_t io, ptrdiff_t dof) {
            T& d = b[so + static_cast<ptrdiff_t>(index[io]) * w.axis_stride];
            d = op(d, s[dof]);
        });
    });
}

struct Assign {
    template <class T>
    T operator()(T, T v) const {
        return v;
    }
};
struct Accumulate {
    template <class T>
    T operator()(T d, T v) const {
        if constexpr (std::is_integral_v<T>) {
            // Wraps like naive's sum narrowed to T.
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(d) + static_cast<U>(v)));
        } else {
            using C = compute_type_t<T>;
            return static_cast<T>(static_cast<C>(d) + static_cast<C>(v));
        }
    }
};

class ScatterImpl final : public LoopKernel<Scatter> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &data = inputs[0], &index = inputs[1], &src = inputs[2], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, data.layout.ndim, *this);
        DType dt = data.layout.dtype;
        size_t esize = dt.size();
        bool add = m_param.mode == Param::Mode::ADD;
        bool ok = add ? !dt.is_bool() : (esize == 1 || esize == 2 || esize == 4 || esize == 8);
        GatherWalk w = walk_of(dst, index, src, ax);
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        bool empty = index.layout.is_empty();
        if (!ok || (!empty && !indices_in_range(w, idx)))
            return run_naive(inputs, outputs, ws);
        bool same_view = dst.raw_ptr() == data.raw_ptr() && dst.layout.eq_layout(data.layout);
        if (!same_view)
            (void)relayout_copy(data, dst);
        m_last = "loop";
        if (empty)
            return;
        void* d = dst.raw_ptr();
        const void* s = src.raw_ptr();
        if (add)
            return dispatch_numeric(dt, param_str(), [&](auto tag) {
                using T = typename decltype(tag)::type;
                if constexpr (!std::is_same_v<T, dt_bool>)  // refused above; never instantiated
                    scatter_rows<T>(w, d, idx, s, Accumulate());
            });
        switch (esize) {
            case 1:
                return scatter_rows<uint8_t>(w, d, idx, s, Assign());
            case 2:
                return scatter_rows<uint16_t>(w, d, idx, s, Assign());
            case 4:
                return scatter_rows<uint32_t>(w, d, idx, s, Assign());
            default:
                return scatter_rows<uint64_t>(w, d, idx, s, Assign());
        }
    }
};

}  // namespace
NM_REGISTER_X86(Scatter, ScatterImpl);
}  // namespace neomeg::dnn::x86
