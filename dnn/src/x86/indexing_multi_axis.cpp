// IndexingMultiAxisVec, IndexingSetMultiAxisVec and IndexingIncrMultiAxisVec on x86 (NumPy
// advanced indexing, data[indices] with one int32 index tensor per axis of `axes`). Every element
// of data[indices] is data at sum over the plain axes of position x stride, plus the offset that
// the index tensors give its position in their broadcast block. The kernels check and wrap the
// index values once into a table of those offsets (naive redoes it per element), then walk the
// result with per-axis strides and a table stride. The read is split across OpenMP threads; the
// writes (SET: the last one wins; INCR: in the element type, in order) stay on one thread in
// naive's row-major order, since two index positions may name one element. Elements move as raw
// values of their size; INCR sums float32 and int32. An index out of range sends the call to
// naive, which raises naive's error; other cases go to naive too.
#include <array>
#include <cstdint>
#include <vector>

#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

using Strides = std::array<ptrdiff_t, TensorLayout::MAX_NDIM>;

// The walk over data[indices]'s shape: data's strides along the plain axes (0 in the index
// block), the block position's row-major stride (0 outside it) into the offset table, and the
// strides of the other tensor walked alongside (dst for the read, value for the writes).
struct Walk {
    TensorLayout shape;
    Strides data{}, table{}, other{};
    std::vector<ptrdiff_t> offsets;  // per block position: the data offset the indices give
};

// Builds the walk; false when an index value is out of range (or unvisited: an empty block).
bool walk_of(const TensorLayout& data, std::span<const TensorND> indices,
             const std::vector<int32_t>& axes, const TensorLayout& other, const std::string& who,
             Walk& w) {
    std::vector<TensorLayout> layouts;
    for (const TensorND& t : indices)
        layouts.push_back(t.layout);
    auto plan = dnn::indexing::plan_multi_axis(data, layouts, axes, who);
    w.shape = TensorLayout(plan.result, data.dtype);
    TensorLayout o = other.broadcast(plan.result);
    size_t nb = plan.index_shape.ndim, block_elems = plan.index_shape.total_nr_elems();
    // An empty block visits no index value, while naive checks every one of them: naive's call.
    if (block_elems == 0)
        return false;
    ptrdiff_t bstride = 1;
    for (size_t d = plan.result.ndim; d-- > 0;) {
        w.other[d] = o.stride[d];
        if (plan.data_axis[d] >= 0) {
            w.data[d] = data.stride[static_cast<size_t>(plan.data_axis[d])];
        } else {
            w.table[d] = bstride;
            bstride *= static_cast<ptrdiff_t>(plan.result[d]);
        }
    }
    // The table, one block position at a time in row-major order.
    w.offsets.assign(block_elems, 0);
    std::vector<TensorLayout> bcast;
    for (const TensorND& t : indices)
        bcast.push_back(t.layout.broadcast(plan.index_shape));
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    for (size_t b = 0; b < block_elems; ++b) {
        ptrdiff_t off = 0;
        for (size_t k = 0; k < indices.size(); ++k) {
            ptrdiff_t io = 0;
            for (size_t d = 0; d < nb; ++d)
                io += static_cast<ptrdiff_t>(idx[d]) * bcast[k].stride[d];
            int64_t v = static_cast<const int32_t*>(indices[k].raw_ptr())[io];
            auto size = static_cast<int64_t>(data.shape[plan.axes[k]]);
            if (v < -size || v >= size)
                return false;
            off += static_cast<ptrdiff_t>(v < 0 ? v + size : v) * data.stride[plan.axes[k]];
        }
        w.offsets[b] = off;
        for (size_t d = nb; d-- > 0;) {
            if (++idx[d] < plan.index_shape[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

// Calls f(data offset, other offset) for the elements [begin, end) of the walk's shape (row-major).
template <class F>
void walk(const Walk& w, size_t begin, size_t end, F&& f) {
    size_t n = w.shape.ndim;
    if (n == 0) {
        if (begin < end)
            f(w.offsets[0], ptrdiff_t{0});
        return;
    }
    size_t last = n - 1, len = w.shape[last];
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    ptrdiff_t dof = 0, tof = 0, oof = 0;
    size_t row = begin / len, col = begin % len;
    for (size_t d = last, rest = row; d-- > 0;) {
        idx[d] = rest % w.shape[d];
        rest /= w.shape[d];
        auto i = static_cast<ptrdiff_t>(idx[d]);
        dof += i * w.data[d];
        tof += i * w.table[d];
        oof += i * w.other[d];
    }
    for (size_t pos = begin; pos < end; ++row) {
        size_t stop = std::min(len, col + (end - pos));
        for (size_t j = col; j < stop; ++j) {
            auto jj = static_cast<ptrdiff_t>(j);
            f(dof + jj * w.data[last] + w.offsets[static_cast<size_t>(tof + jj * w.table[last])],
              oof + jj * w.other[last]);
        }
        pos += stop - col;
        col = 0;
        for (size_t d = last; d-- > 0;) {
            dof += w.data[d];
            tof += w.table[d];
            oof += w.other[d];
            if (++idx[d] < w.shape[d])
                break;
            auto len_d = static_cast<ptrdiff_t>(w.shape[d]);
            dof -= w.data[d] * len_d;
            tof -= w.table[d] * len_d;
            oof -= w.other[d] * len_d;
            idx[d] = 0;
        }
    }
}

bool movable(DType dt) {
    size_t s = dt.size();
    return s == 1 || s == 2 || s == 4 || s == 8;
}

template <class T>
void gather(const Walk& w, const void* src, void* dst) {
    const auto* s = static_cast<const T*>(src);
    auto* d = static_cast<T*>(dst);
    size_t n = w.shape.total_nr_elems();
    parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
        walk(w, b, e, [&](ptrdiff_t so, ptrdiff_t dof) { d[dof] = s[so]; });
    });
}

class IndexingMultiAxisVecImpl final : public LoopKernel<IndexingMultiAxisVec> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        Walk w;
        if (!movable(src.layout.dtype) ||
            !walk_of(src.layout, inputs.subspan(1), m_param.axes, dst.layout, param_str(), w))
            return run_naive(inputs, outputs, ws);
        m_last = "loop";
        if (w.shape.is_empty())
            return;
        switch (src.layout.dtype.size()) {
            case 1:
                return gather<uint8_t>(w, src.raw_ptr(), dst.raw_ptr());
            case 2:
                return gather<uint16_t>(w, src.raw_ptr(), dst.raw_ptr());
            case 4:
                return gather<uint32_t>(w, src.raw_ptr(), dst.raw_ptr());
            default:
                return gather<uint64_t>(w, src.raw_ptr(), dst.raw_ptr());
        }
    }
};

// dst = data, then dst[indices] op= value (broadcast), in naive's order on one thread.
template <class Op>
class IndexingUpdate : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

protected:
    // Whether the kernel updates elements of this dtype.
    virtual bool updates(DType dt) const = 0;
    virtual void update(const Walk& w, void* dst, const void* value, DType dt) const = 0;

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &data = inputs[0], &value = inputs[1], &dst = outputs[0];
        Walk w;
        // The walk addresses dst, which holds data's values: dst's strides, data's shape.
        if (!updates(data.layout.dtype) ||
            !walk_of(dst.layout, inputs.subspan(2), this->m_param.axes, value.layout,
                     this->param_str(), w))
            return this->run_naive(inputs, outputs, ws);
        bool same_view = dst.raw_ptr() == data.raw_ptr() && dst.layout.eq_layout(data.layout);
        if (!same_view && !data.layout.is_empty())
            (void)relayout_copy(data, dst);
        this->m_last = "loop";
        if (!w.shape.is_empty())
            update(w, dst.raw_ptr(), value.raw_ptr(), data.layout.dtype);
    }
};

template <class T, class F>
void update_in_order(const Walk& w, void* dst, const void* value, F op) {
    auto* d = static_cast<T*>(dst);
    const auto* v = static_cast<const T*>(value);
    walk(w, 0, w.shape.total_nr_elems(), [&](ptrdiff_t dof, ptrdiff_t vo) { op(d[dof], v[vo]); });
}

class IndexingSetMultiAxisVecImpl final : public IndexingUpdate<IndexingSetMultiAxisVec> {
public:
    using IndexingUpdate::IndexingUpdate;

protected:
    bool updates(DType dt) const override { return movable(dt); }
    void update(const Walk& w, void* dst, const void* value, DType dt) const override {
        auto set = [](auto& d, auto v) { d = v; };
        switch (dt.size()) {
            case 1:
                return update_in_order<uint8_t>(w, dst, value, set);
            case 2:
                return update_in_order<uint16_t>(w, dst, value, set);
            case 4:
                return update_in_order<uint32_t>(w, dst, value, set);
            default:
                return update_in_order<uint64_t>(w, dst, value, set);
        }
    }
};

class IndexingIncrMultiAxisVecImpl final : public IndexingUpdate<IndexingIncrMultiAxisVec> {
public:
    using IndexingUpdate::IndexingUpdate;

protected:
    bool updates(DType dt) const override { return dt == dtype::Float32 || dt == dtype::Int32; }
    void update(const Walk& w, void* dst, const void* value, DType dt) const override {
        if (dt == dtype::Float32)
            return update_in_order<float>(w, dst, value, [](float& d, float v) { d += v; });
        // Wraps like naive's sum narrowed to int32.
        update_in_order<int32_t>(w, dst, value, [](int32_t& d, int32_t v) {
            d = static_cast<int32_t>(static_cast<uint32_t>(d) + static_cast<uint32_t>(v));
        });
    }
};

}  // namespace
NM_REGISTER_X86(IndexingMultiAxisVec, IndexingMultiAxisVecImpl);
NM_REGISTER_X86(IndexingSetMultiAxisVec, IndexingSetMultiAxisVecImpl);
NM_REGISTER_X86(IndexingIncrMultiAxisVec, IndexingIncrMultiAxisVecImpl);
}  // namespace neomeg::dnn::x86
