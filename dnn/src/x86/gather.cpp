// Gather, IndexingOneHot and IndexingSetOneHot on x86: the first two read dst[i] = src[i with
// axis ax replaced by index[i]], walked over dst's shape with each tensor's own strides
// (IndexingOneHot's index has no axis ax: it reads with stride 0 there); IndexingSetOneHot writes
// those positions of dst from sub. The index values are checked (row by row as Gather goes); any
// out of range sends the call to naive, which raises the error naive raises. Elements move as raw
// values of their size; outer positions split across OpenMP threads when large.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/x86/gather_walk.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

// A gathered element is a dependent load (index, then src) that often misses the caches: it
// weighs this many simple float operations in the threading grain.
constexpr size_t kGatherCost = 4;

// Each row's index values are checked just before the row is gathered, in the same pass; a row with
// a value out of range is skipped and the call returns false.
template <class T>
bool gather(const GatherWalk& w, const void* src, const int32_t* index, void* dst) {
    const auto* s = static_cast<const T*>(src);
    auto* d = static_cast<T*>(dst);
    size_t last = w.shape.ndim - 1, len = w.shape[last], outer = outer_count(w);
    const ptrdiff_t ss = w.src[last], is = w.index[last], ds = w.dst[last], as = w.axis_stride;
    std::atomic<bool> bad{false};
    parallel_ranges(outer, outer * len * kGatherCost, kParallelGrain, [&](size_t b, size_t e) {
        walk_rows(w, b, e, [&](ptrdiff_t so, ptrdiff_t io, ptrdiff_t dof) {
            const int32_t* ip = index + io;
            if (!row_in_range(ip, is, len, w.axis_size)) {
                bad.store(true, std::memory_order_relaxed);
                return;
            }
            const T* sp = s + so;
            T* dp = d + dof;
            // The indexed axis innermost, index and dst dense along it: the common case
            // (F.gather along the last axis), without the stride multiplications. Four elements
            // a step: the loop of one was short enough that where it sat against the 64-byte
            // lines of code moved F.gather's time (1024x64 of 1024x2048) by 17% between two
            // builds of the same source on Zen 3.
            if (ss == 0 && is == 1 && ds == 1) {
                auto at = [&](size_t j) { return sp[static_cast<ptrdiff_t>(ip[j]) * as]; };
                size_t j = 0;
                for (; j + 4 <= len; j += 4) {
                    const T v0 = at(j), v1 = at(j + 1), v2 = at(j + 2), v3 = at(j + 3);
                    dp[j] = v0;
                    dp[j + 1] = v1;
                    dp[j + 2] = v2;
                    dp[j + 3] = v3;
                }
                for (; j < len; ++j)
                    dp[j] = at(j);
                return;
            }
            for (size_t j = 0; j < len; ++j) {
                auto jj = static_cast<ptrdiff_t>(j);
                dp[jj * ds] = sp[jj * ss + static_cast<ptrdiff_t>(ip[jj * is]) * as];
            }
        });
    });
    return !bad.load();
}

// The reverse move: big[so + index * axis_stride] = small[dof], the walk's "src" strides
// addressing big and its "dst" strides small.
template <class T>
void scatter(const GatherWalk& w, void* big, const int32_t* index, const void* small) {
    auto* b = static_cast<T*>(big);
    const auto* s = static_cast<const T*>(small);
    size_t outer = outer_count(w);
    parallel_ranges(outer, w.shape.total_nr_elems(), kParallelGrain, [&](size_t lo, size_t hi) {
        walk(w, lo, hi, [&](ptrdiff_t so, ptrdiff_t io, ptrdiff_t dof) {
            b[so + static_cast<ptrdiff_t>(index[io]) * w.axis_stride] = s[dof];
        });
    });
}

// Runs the gather and returns true, or returns false for an element size it does not move or an
// index out of range (dst then partly written: naive, which raises, runs next).
bool run_gather(const GatherWalk& walk, const TensorND& src, const TensorND& index,
                const TensorND& dst) {
    if (walk.shape.is_empty())
        return true;
    const GatherWalk w = without_unit_axes(walk);
    const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
    switch (src.layout.dtype.size()) {
        case 1:
            return gather<uint8_t>(w, src.raw_ptr(), idx, dst.raw_ptr());
        case 2:
            return gather<uint16_t>(w, src.raw_ptr(), idx, dst.raw_ptr());
        case 4:
            return gather<uint32_t>(w, src.raw_ptr(), idx, dst.raw_ptr());
        case 8:
            return gather<uint64_t>(w, src.raw_ptr(), idx, dst.raw_ptr());
        default:
            return false;
    }
}

// dst over dst's shape; src's strides but 0 along ax; `index` strides given by the caller.
GatherWalk walk_of(const TensorND& src, const TensorND& dst, size_t ax) {
    GatherWalk w;
    w.shape = dst.layout;
    for (size_t d = 0; d < dst.layout.ndim; ++d) {
        w.src[d] = d == ax ? 0 : src.layout.stride[d];
        w.dst[d] = dst.layout.stride[d];
    }
    w.axis_stride = src.layout.stride[ax];
    w.axis_size = static_cast<int64_t>(src.layout.shape[ax]);
    return w;
}

class GatherImpl final : public LoopKernel<Gather> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &index = inputs[1], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, src.layout.ndim, *this);
        GatherWalk w = walk_of(src, dst, ax);
        for (size_t d = 0; d < index.layout.ndim; ++d)
            w.index[d] = index.layout.stride[d];
        if (run_gather(w, src, index, dst)) {
            m_last = "loop";
            return;
        }
        run_naive(inputs, outputs, ws);
    }
};

// dst = data with the elements that sub's positions select along ax replaced by sub's: data copied
// by relayout_copy (unless dst is data's own view, an in-place update), then sub scattered.
class IndexingSetOneHotImpl final : public LoopKernel<IndexingSetOneHot> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &data = inputs[0], &index = inputs[1], &sub = inputs[2], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, data.layout.ndim, *this);
        GatherWalk w = walk_of(dst, sub, ax);
        for (size_t d = 0, i = 0; d < sub.layout.ndim; ++d)
            w.index[d] = d == ax ? 0 : index.layout.stride[i++];
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        size_t esize = data.layout.dtype.size();
        bool movable = esize == 1 || esize == 2 || esize == 4 || esize == 8;
        if (!movable || (!sub.layout.is_empty() && !indices_in_range(w, idx))) {
            run_naive(inputs, outputs, ws);
            return;
        }
        bool same_view = dst.raw_ptr() == data.raw_ptr() && dst.layout.eq_layout(data.layout);
        if (!same_view)
            (void)relayout_copy(data, dst);
        if (!sub.layout.is_empty()) {
            switch (esize) {
                case 1:
                    scatter<uint8_t>(w, dst.raw_ptr(), idx, sub.raw_ptr());
                    break;
                case 2:
                    scatter<uint16_t>(w, dst.raw_ptr(), idx, sub.raw_ptr());
                    break;
                case 4:
                    scatter<uint32_t>(w, dst.raw_ptr(), idx, sub.raw_ptr());
                    break;
                default:
                    scatter<uint64_t>(w, dst.raw_ptr(), idx, sub.raw_ptr());
            }
        }
        m_last = "loop";
    }
};

class IndexingOneHotImpl final : public LoopKernel<IndexingOneHot> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &index = inputs[1], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, src.layout.ndim, *this);
        GatherWalk w = walk_of(src, dst, ax);
        // index has src's shape without ax; dst's ax has size 1, read at stride 0.
        for (size_t d = 0, i = 0; d < dst.layout.ndim; ++d)
            w.index[d] = d == ax ? 0 : index.layout.stride[i++];
        if (run_gather(w, src, index, dst)) {
            m_last = "loop";
            return;
        }
        run_naive(inputs, outputs, ws);
    }
};

}  // namespace
NM_REGISTER_X86(Gather, GatherImpl);
NM_REGISTER_X86(IndexingOneHot, IndexingOneHotImpl);
NM_REGISTER_X86(IndexingSetOneHot, IndexingSetOneHotImpl);
}  // namespace neomeg::dnn::x86
