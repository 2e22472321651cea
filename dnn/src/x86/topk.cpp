// TopK on x86: every mode and dtype naive takes and any strides. Each line's keys
// (sort_keys.h) are unique, so selecting the k smallest keys (a bounded heap for small k,
// nth_element otherwise) picks exactly naive's choice among ties; the selection is then
// sorted by key (VALUE_IDX_SORTED, with vqsort) or by position (VALUE_IDX_NOSORT, src's order as
// naive writes it). Lines are split across OpenMP threads. A dense float32 line's heap scan tests
// its elements a vector at a time (topk_hwy.cpp).
#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/sort_keys.h"
#include "src/x86/topk_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// Up to this k, and for lines at least kHeapRatio times longer, the k smallest keys are kept in a
// max-heap during one pass over the line (few elements enter it once it holds small keys) instead
// of building every key and partitioning them.
constexpr size_t kHeapMaxK = 256, kHeapRatio = 8;

// Leaves the k smallest keys of the line in keys[0, k), the k-th smallest at keys[k - 1].
bool use_heap(size_t n, size_t k) {
    return k <= kHeapMaxK && k * kHeapRatio <= n;
}

// Replaces the maximum of the max-heap heap[0, k) with key, below it, and sifts it down: one walk
// of the heap where pop_heap and push_heap took two.
inline void replace_top(uint64_t* heap, size_t k, uint64_t key) {
    size_t i = 0;
    for (size_t c = 1; c < k; c = 2 * i + 1) {
        if (c + 1 < k && heap[c + 1] > heap[c])
            ++c;
        if (heap[c] <= key)
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = key;
}

template <class T>
void select_smallest(const T* line, ptrdiff_t stride, size_t n, size_t k, bool descending,
                     uint64_t* keys) {
    if (!use_heap(n, k)) {
        make_sort_keys(line, stride, n, descending, keys);
        std::nth_element(keys, keys + (k - 1), keys + n);
        return;
    }
    uint32_t flip = rank_flip(descending);
    for (size_t i = 0; i < k; ++i)
        keys[i] = sort_key(line[static_cast<ptrdiff_t>(i) * stride], i, flip);
    std::make_heap(keys, keys + k);
    // A later element's position exceeds every position in the heap, so ascending its key is
    // below the heap's maximum exactly when its value's rank is, and descending (positions
    // flipped) exactly when its rank is not above: the rank alone decides.
    uint32_t top = static_cast<uint32_t>(keys[0] >> 32);
    for (size_t i = k; i < n; ++i) {
        if constexpr (std::is_same_v<T, float>) {
            // Dense float32: the elements that do not enter skipped a vector at a time (the
            // scalar test of every element was the whole cost of the bench's top-10 of 4096).
            if (stride == 1) {
                i = topk_next_entering_f32(line, i, n, flip, top, descending);
                if (i == n)
                    break;
            }
        }
        uint32_t rank = value_rank(line[static_cast<ptrdiff_t>(i) * stride]) ^ flip;
        if (rank < top || (descending && rank == top)) {
            replace_top(keys, k, (uint64_t{rank} << 32) | (static_cast<uint32_t>(i) ^ flip));
            top = static_cast<uint32_t>(keys[0] >> 32);
        }
    }
    // The heap's maximum is the k-th smallest.
    std::swap(keys[0], keys[k - 1]);
}

class TopKImpl final : public LoopKernel<TopK> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& src = inputs[0];
        size_t outer = src.layout.ndim - 1, n = src.layout[outer];
        size_t rows = src.layout.total_nr_elems() / std::max<size_t>(n, 1);
        auto k = static_cast<size_t>(std::abs(m_param.k));
        ptrdiff_t ss = src.layout.stride[outer];
        bool descending = m_param.k < 0;
        uint32_t flip = rank_flip(descending);
        Param::Mode mode = m_param.mode;
        m_last = use_heap(n, k) ? "heap" : "nth_element";
        if (rows == 0)
            return;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            const TensorND& values = outputs[0];
            T* v = static_cast<T*>(values.raw_ptr());
            for_each_sort_row(rows, n, [&](size_t r, uint64_t* keys) {
                const T* line = s + row_offset(src.layout, outer, r);
                select_smallest(line, ss, n, k, descending, keys);
                if (mode == Param::Mode::KTH_ONLY) {
                    auto p = static_cast<ptrdiff_t>(key_position(keys[k - 1], flip));
                    v[row_offset(values.layout, outer, r)] = line[p * ss];
                    return;
                }
                uint32_t key_flip = flip;
                if (mode == Param::Mode::VALUE_IDX_SORTED) {
                    sort_keys(keys, k);
                } else {
                    // Positions alone, in src's order, as naive gives them.
                    for (size_t i = 0; i < k; ++i)
                        keys[i] = key_position(keys[i], flip);
                    std::sort(keys, keys + k);
                    key_flip = 0;
                }
                const TensorND& indices = outputs[1];
                T* vl = v + row_offset(values.layout, outer, r);
                auto* il = static_cast<dt_int32*>(indices.raw_ptr()) +
                           row_offset(indices.layout, outer, r);
                ptrdiff_t vs = values.layout.stride[outer], is = indices.layout.stride[outer];
                for (size_t i = 0; i < k; ++i) {
                    uint32_t p = key_position(keys[i], key_flip);
                    auto o = static_cast<ptrdiff_t>(i);
                    vl[o * vs] = line[static_cast<ptrdiff_t>(p) * ss];
                    il[o * is] = static_cast<dt_int32>(p);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(TopK, TopKImpl);
}  // namespace neomeg::dnn::x86
