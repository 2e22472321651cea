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
//
// The embedding form, one index tensor on axis 0 (F.embedding and its gradient, a 16x128 batch
// of tokens into a 30522x256 table), moves whole rows of the trailing axes instead: the read
// copies one row per index (with contiguous indices and dst straight from the index values, each
// checked as its row is copied in vectors, index_rows_hwy.h; else through a plan of rows and dst
// offsets), and INCR sorts the index positions by row (stably, a counting sort) so that threads
// own disjoint ranges of dst's rows. Each thread writes each of its rows once: data's row, plus
// every value row that names it, added in naive's order. The sums are naive's bit for bit whatever
// the number of threads, and the copy of data (the gradient's zeros, given as a broadcast scalar)
// is no longer a serial pass of its own before the updates.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/x86/handle.h"
#include "src/x86/index_rows_hwy.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/stream_copy_hwy.h"

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
             const std::vector<int32_t>& axes, const TensorLayout& other,
             const dnn::indexing::Who& who, Walk& w) {
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

// How the trailing axes [1, ndim) of a layout step through one row: Dense (row-major, stride 1
// last; also a row of one element), Broadcast (every stride 0: one value repeated) or Other.
enum class RowForm { Dense, Broadcast, Other };

RowForm row_form(const TensorLayout& l) {
    bool dense = true, zero = true;
    ptrdiff_t expect = 1;
    for (size_t d = l.ndim; d-- > 1;) {
        if (l.shape[d] == 1)
            continue;
        dense = dense && l.stride[d] == expect;
        zero = zero && l.stride[d] == 0;
        expect *= static_cast<ptrdiff_t>(l.shape[d]);
    }
    return dense ? RowForm::Dense : zero ? RowForm::Broadcast : RowForm::Other;
}

// Per position of `block` (row-major), the offset that l's first block.ndim strides give it.
std::vector<ptrdiff_t> block_offsets(const TensorShape& block, const TensorLayout& l) {
    std::vector<ptrdiff_t> off(block.total_nr_elems());
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    ptrdiff_t o = 0;
    for (size_t b = 0; b < off.size(); ++b) {
        off[b] = o;
        for (size_t d = block.ndim; d-- > 0;) {
            o += l.stride[d];
            if (++idx[d] < block[d])
                break;
            o -= l.stride[d] * static_cast<ptrdiff_t>(block[d]);
            idx[d] = 0;
        }
    }
    return off;
}

// The embedding form's plan: data (n, row...) indexed by one tensor on axis 0.
struct RowPlan {
    size_t n = 0, len = 1;      // data's rows, elements per row
    bool other_dense = true;    // whether other's rows are dense (else one broadcast value)
    std::vector<size_t> rows;   // per index position: its row, wrapped
    std::vector<ptrdiff_t> at;  // per index position: the other tensor's row offset
};

// Builds the row plan when the call has the embedding form, `other` (dst for the read, value
// for the update; broadcast to the result) steps through dense or broadcast rows and every
// index is in range; false sends the call to the general walk (and an out-of-range index on to
// naive's error).
bool row_plan(const TensorLayout& data, std::span<const TensorND> indices,
              const std::vector<int32_t>& axes, const TensorLayout& other,
              const dnn::indexing::Who& who, RowPlan& p) {
    if (indices.size() != 1 || axes.size() != 1 || data.ndim == 0 ||
        (axes[0] != 0 && axes[0] != -static_cast<int32_t>(data.ndim)))
        return false;
    const TensorLayout& il = indices[0].layout;
    if (il.is_empty() || data.is_empty())
        return false;
    auto plan = dnn::indexing::plan_multi_axis(data, {&il, 1}, axes, who);
    TensorLayout o = other.broadcast(plan.result);
    TensorLayout orow = o, drow = data;  // their row axes alone, after one leading axis
    orow.ndim = drow.ndim;
    for (size_t d = 1; d < drow.ndim; ++d) {
        orow.shape[d] = o.shape[il.ndim + d - 1];
        orow.stride[d] = o.stride[il.ndim + d - 1];
    }
    RowForm form = row_form(orow);
    if (form == RowForm::Other)
        return false;
    p.other_dense = form == RowForm::Dense;
    p.n = data.shape[0];
    p.len = data.total_nr_elems() / p.n;
    p.at = block_offsets(il, o);
    std::vector<ptrdiff_t> io = block_offsets(il, il);
    const auto* v = static_cast<const int32_t*>(indices[0].raw_ptr());
    auto n = static_cast<int64_t>(p.n);
    p.rows.resize(io.size());
    for (size_t b = 0; b < io.size(); ++b) {
        int64_t r = v[io[b]];
        if (r < -n || r >= n)
            return false;
        p.rows[b] = static_cast<size_t>(r < 0 ? r + n : r);
    }
    return true;
}

// dst[k, :] = src[rows[k], :] for each index position k; dst's rows dense at the offsets p.at.
template <class T>
void gather_rows(const RowPlan& p, const TensorLayout& src_l, const void* src, void* dst) {
    const auto* s = static_cast<const T*>(src);
    auto* d = static_cast<T*>(dst);
    bool dense = row_form(src_l) == RowForm::Dense;
    size_t len = p.len, count = p.rows.size();
    ptrdiff_t rs = src_l.stride[0];
    parallel_ranges(count, count * len, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t k = b; k < e; ++k) {
            const T* row = s + static_cast<ptrdiff_t>(p.rows[k]) * rs;
            if (dense)
                std::memcpy(d + p.at[k], row, len * sizeof(T));
            else
                std::fill_n(d + p.at[k], len, *row);
        }
    });
}

// A dst at least this large takes non-temporal stores (a gather only writes memory, so a plain
// store's read of each line is a third of the traffic): 4096 x 4096 floats of 2048 x 32 table
// rows went from 21.5 to 27.5-27.9 GB/s on one Zen 4 core (0.66 -> 0.86 of a triad on huge
// pages). Past stream_copy_hwy.h's 8 MiB: the audit's 8 MiB dst (1024 x 64 lookups), which the
// next op finds in the last-level cache, took twice as long written non-temporally.
constexpr size_t kStreamIndexedRowsBytes = size_t(32) << 20;

// The embedding form read into a contiguous dst from contiguous indices and data of dense rows:
// dst row k is data's row v[k], each index checked as its row is copied (index_rows_hwy.h; an
// index out of range: false, and naive raises). The row plan's tables of rows and dst offsets
// (65536 entries each for 1024x64 lookups into 32-float rows) took longer than the copies: 0.56x
// PyTorch (docs/x86-backend-log.md, "Padding in one pass").
bool copy_indexed_rows(const TensorND& data, const TensorND& index, const TensorND& dst) {
    const auto* v = static_cast<const int32_t*>(index.raw_ptr());
    const size_t count = index.layout.total_nr_elems();
    const auto n = static_cast<int64_t>(data.layout.shape[0]);
    const size_t size = data.layout.dtype.size(), len = data.layout.total_nr_elems() / size_t(n);
    const ptrdiff_t rs = data.layout.stride[0] * static_cast<ptrdiff_t>(size);
    const bool stream = count * len * size >= kStreamIndexedRowsBytes;
    std::atomic<bool> in_range{true};
    parallel_ranges(count, count * len, kParallelGrain, [&](size_t b, size_t e) {
        if (copy_rows_by_index(dst.raw_ptr(), data.raw_ptr(), rs, len * size, n, v, b, e, stream) !=
            e)
            in_range.store(false, std::memory_order_relaxed);
        if (stream)
            stream_fence();
    });
    return in_range.load(std::memory_order_relaxed);
}

// Whether the call is the embedding form that copy_indexed_rows takes.
bool indexed_rows_form(const TensorND& data, std::span<const TensorND> indices,
                       const std::vector<int32_t>& axes, const TensorND& dst) {
    const TensorLayout& l = data.layout;
    return indices.size() == 1 && axes.size() == 1 && l.ndim > 0 &&
           (axes[0] == 0 || axes[0] == -static_cast<int32_t>(l.ndim)) && !l.is_empty() &&
           !indices[0].layout.is_empty() && indices[0].layout.is_contiguous() &&
           dst.layout.is_contiguous() && row_form(l) == RowForm::Dense;
}

// A slice (Tensor.__getitem__ turns x[:, a:b:c] into one index tensor of a progression) picks
// data at a fixed step along one result axis: its walk is a strided view of data, which
// relayout_copy moves a row at a time. The general walk's table lookup per element took 1.5 ms
// for x[:, :1000] of a 1024x2048 float32 (a cross_entropy's input), 5x a copy. Fills `view` and
// returns true when the walk has that form (one block axis, offsets base + j * step).
bool strided_view(const Walk& w, const TensorND& src, TensorND& view) {
    size_t axis = w.shape.ndim;
    for (size_t d = 0; d < w.shape.ndim; ++d)
        if (w.table[d] != 0) {
            if (axis != w.shape.ndim || w.table[d] != 1)
                return false;
            axis = d;
        }
    if (axis == w.shape.ndim || w.offsets.size() != w.shape[axis] || w.offsets.empty())
        return false;
    ptrdiff_t step = w.offsets.size() > 1 ? w.offsets[1] - w.offsets[0] : 0;
    for (size_t j = 1; j < w.offsets.size(); ++j)
        if (w.offsets[j] - w.offsets[j - 1] != step)
            return false;
    TensorLayout l = w.shape;
    for (size_t d = 0; d < l.ndim; ++d)
        l.stride[d] = d == axis ? step : w.data[d];
    auto* p = static_cast<const std::byte*>(src.raw_ptr()) +
              w.offsets[0] * static_cast<ptrdiff_t>(l.dtype.size());
    view = TensorND(const_cast<std::byte*>(p), l);
    return true;
}

// Whether a 1-d index tensor's values, wrapped into [0, n), step by one amount: strided_view's
// form. Its walk first tables every index's offset, which for the embedding form with 1-d indices
// took as long as the row copies; indices that are no progression stop here at the first step that
// differs.
bool progression(const TensorND& index, const TensorLayout& data, int32_t axis) {
    const auto nd = static_cast<int32_t>(data.ndim);
    if (axis < -nd || axis >= nd)
        return true;  // the walk raises the operator's error
    const auto n =
            static_cast<int64_t>(data.shape[static_cast<size_t>(axis < 0 ? axis + nd : axis)]);
    const auto* v = static_cast<const int32_t*>(index.raw_ptr());
    const ptrdiff_t st = index.layout.stride[0];
    const size_t count = index.layout.shape[0];
    auto at = [&](size_t j) {
        int64_t x = v[static_cast<ptrdiff_t>(j) * st];
        return x < 0 ? x + n : x;
    };
    const int64_t step = count > 1 ? at(1) - at(0) : 0;
    for (size_t j = 1; j < count; ++j)
        if (at(j) - at(j - 1) != step)
            return false;
    return true;
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
        // A slice first, on axis 0 too: l[:1024] of 4096 int32 labels took 8 us as 1024 rows
        // of one element each.
        Walk sw;
        TensorND slice;
        if (movable(src.layout.dtype) && inputs.size() == 2 && inputs[1].layout.ndim == 1 &&
            !inputs[1].layout.is_empty() && m_param.axes.size() == 1 &&
            progression(inputs[1], src.layout, m_param.axes[0]) &&
            walk_of(src.layout, inputs.subspan(1), m_param.axes, dst.layout, *this, sw) &&
            strided_view(sw, src, slice) && relayout_copy(slice, dst)) {
            m_last = "view";
            return;
        }
        if (indexed_rows_form(src, inputs.subspan(1), m_param.axes, dst)) {
            // An index out of range: naive raises its error.
            if (!copy_indexed_rows(src, inputs[1], dst))
                return run_naive(inputs, outputs, ws);
            m_last = "rows";
            return;
        }
        RowPlan rp;
        if (movable(src.layout.dtype) && row_form(src.layout) != RowForm::Other &&
            row_plan(src.layout, inputs.subspan(1), m_param.axes, dst.layout, *this, rp) &&
            rp.other_dense) {
            m_last = "rows";
            switch (src.layout.dtype.size()) {
                case 1:
                    return gather_rows<uint8_t>(rp, src.layout, src.raw_ptr(), dst.raw_ptr());
                case 2:
                    return gather_rows<uint16_t>(rp, src.layout, src.raw_ptr(), dst.raw_ptr());
                case 4:
                    return gather_rows<uint32_t>(rp, src.layout, src.raw_ptr(), dst.raw_ptr());
                default:
                    return gather_rows<uint64_t>(rp, src.layout, src.raw_ptr(), dst.raw_ptr());
            }
        }
        Walk w;
        if (!movable(src.layout.dtype) ||
            !walk_of(src.layout, inputs.subspan(1), m_param.axes, dst.layout, *this, w))
            return run_naive(inputs, outputs, ws);
        if (w.shape.is_empty()) {
            m_last = "loop";
            return;
        }
        TensorND view;
        if (strided_view(w, src, view) && relayout_copy(view, dst)) {
            m_last = "view";
            return;
        }
        m_last = "loop";
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
    // The whole call (dst = data included) in the embedding form; false: not in that form.
    virtual bool update_rows(std::span<const TensorND>, const TensorND&, bool) const {
        return false;
    }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &data = inputs[0], &value = inputs[1], &dst = outputs[0];
        bool same_view = dst.raw_ptr() == data.raw_ptr() && dst.layout.eq_layout(data.layout);
        if (updates(data.layout.dtype) && update_rows(inputs, dst, same_view)) {
            this->m_last = "rows";
            return;
        }
        Walk w;
        // The walk addresses dst, which holds data's values: dst's strides, data's shape.
        if (!updates(data.layout.dtype) ||
            !walk_of(dst.layout, inputs.subspan(2), this->m_param.axes, value.layout, *this, w))
            return this->run_naive(inputs, outputs, ws);
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

// The embedding form of INCR: dst = data, then dst[rows[k], :] += value[k, :] for each index
// position k, as one pass over dst's rows that threads split (see the file comment).
template <class T, class Add>
bool add_rows(std::span<const TensorND> inputs, const TensorND& dst, bool same_view,
              const std::vector<int32_t>& axes, const dnn::indexing::Who& who, Add add) {
    const TensorND &data = inputs[0], &value = inputs[1];
    RowPlan p;
    RowForm data_form = row_form(data.layout);
    if (data_form == RowForm::Other || row_form(dst.layout) != RowForm::Dense ||
        !row_plan(dst.layout, inputs.subspan(2), axes, value.layout, who, p))
        return false;
    size_t n = p.n, len = p.len, count = p.rows.size();
    // The index positions sorted by row, stably: row r's are order[start[r], start[r + 1]).
    std::vector<size_t> start(n + 1, 0), order(count);
    for (size_t r : p.rows)
        ++start[r + 1];
    for (size_t r = 0; r < n; ++r)
        start[r + 1] += start[r];
    std::vector<size_t> next(start.begin(), start.end() - 1);
    for (size_t k = 0; k < count; ++k)
        order[next[p.rows[k]]++] = k;

    const auto* src = static_cast<const T*>(data.raw_ptr());
    const auto* val = static_cast<const T*>(value.raw_ptr());
    auto* d = static_cast<T*>(dst.raw_ptr());
    const ptrdiff_t ss = data.layout.stride[0], ds = dst.layout.stride[0];
    const auto slen = static_cast<ptrdiff_t>(len);
    const bool src_dense = data_form == RowForm::Dense;
    // A broadcast zero (the gradient's zeros) fills as memset; other broadcast values as stores.
    T zero{};
    const bool src_zero = !src_dense && std::memcmp(src, &zero, sizeof(T)) == 0;
    // data's rows [b, e) into dst's.
    auto copy = [&](size_t b, size_t e) {
        if (same_view || b == e)
            return;
        T* out = d + static_cast<ptrdiff_t>(b) * ds;
        size_t rows = e - b;
        if (ds == slen && (src_dense ? ss == slen : ss == 0)) {  // one block
            if (src_dense)
                std::memcpy(out, src + static_cast<ptrdiff_t>(b) * ss, rows * len * sizeof(T));
            else if (src_zero)
                std::memset(static_cast<void*>(out), 0, rows * len * sizeof(T));
            else
                std::fill_n(out, rows * len, *src);
            return;
        }
        for (size_t r = b; r < e; ++r, out += ds) {
            const T* in = src + static_cast<ptrdiff_t>(r) * ss;
            if (src_dense)
                std::memcpy(out, in, len * sizeof(T));
            else
                std::fill_n(out, len, *in);
        }
    };
    parallel_ranges(n, (n + count) * len, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t r = b; r < e;) {
            size_t quiet = r;  // a run of rows no index names: data's values only
            while (r < e && start[r] == start[r + 1])
                ++r;
            copy(quiet, r);
            if (r == e)
                break;
            copy(r, r + 1);
            T* row = d + static_cast<ptrdiff_t>(r) * ds;
            for (size_t i = start[r]; i < start[r + 1]; ++i) {
                const T* v = val + p.at[order[i]];
                if (p.other_dense) {
                    for (size_t j = 0; j < len; ++j)
                        row[j] = add(row[j], v[j]);
                } else {
                    for (size_t j = 0; j < len; ++j)
                        row[j] = add(row[j], *v);
                }
            }
            ++r;
        }
    });
    return true;
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

// Wraps like naive's sum narrowed to int32.
int32_t add_wrapping(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

class IndexingIncrMultiAxisVecImpl final : public IndexingUpdate<IndexingIncrMultiAxisVec> {
public:
    using IndexingUpdate::IndexingUpdate;

protected:
    bool updates(DType dt) const override { return dt == dtype::Float32 || dt == dtype::Int32; }
    bool update_rows(std::span<const TensorND> inputs, const TensorND& dst,
                     bool same_view) const override {
        if (dst.layout.dtype == dtype::Float32)
            return add_rows<float>(inputs, dst, same_view, m_param.axes, *this,
                                   [](float a, float b) { return a + b; });
        return add_rows<int32_t>(inputs, dst, same_view, m_param.axes, *this, add_wrapping);
    }
    void update(const Walk& w, void* dst, const void* value, DType dt) const override {
        if (dt == dtype::Float32)
            return update_in_order<float>(w, dst, value, [](float& d, float v) { d += v; });
        update_in_order<int32_t>(w, dst, value,
                                 [](int32_t& d, int32_t v) { d = add_wrapping(d, v); });
    }
};

}  // namespace
NM_REGISTER_X86(IndexingMultiAxisVec, IndexingMultiAxisVecImpl);
NM_REGISTER_X86(IndexingSetMultiAxisVec, IndexingSetMultiAxisVecImpl);
NM_REGISTER_X86(IndexingIncrMultiAxisVec, IndexingIncrMultiAxisVecImpl);
}  // namespace neomeg::dnn::x86
