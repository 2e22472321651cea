// Dense rows: the view of an elementwise loop's operands (inputs broadcast to dst's shape, then
// dst) as rows along which every operand is either dense (unit stride) or one broadcast value,
// walked over the outer axes with each operand's own strides. Shared by the x86 loop kernels that
// map elements one to one (Elemwise, TypeCvt): a run of a row is what their vector loops take.
// Files including this compile with OpenMP's flags (parallel.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {

constexpr size_t kMaxOperands = 5;  // Elemwise: four inputs and dst
enum class RunKind { Dense, Broadcast };

// How `l` (of dst's shape) is laid out along axes [from, ndim): dense row-major with unit
// innermost stride, or stride 0 throughout; size-1 axes address nothing and fit both.
inline std::optional<RunKind> run_kind(const TensorLayout& l, size_t from) {
    bool dense = true, zero = true;
    ptrdiff_t expect = 1;
    for (size_t d = l.ndim; d-- > from;) {
        if (l[d] == 1)
            continue;
        dense = dense && l.stride[d] == expect;
        zero = zero && l.stride[d] == 0;
        expect *= static_cast<ptrdiff_t>(l[d]);
    }
    if (dense)
        return RunKind::Dense;
    if (zero)
        return RunKind::Broadcast;
    return std::nullopt;
}

// The rows: the operands over the outer axes [0, split), each row `inner` elements.
struct Rows {
    size_t split = 0, inner = 1, count = 1, operands = 0;
    std::array<TensorLayout, kMaxOperands> layouts;  // inputs broadcast to dst's shape, then dst
    std::array<bool, kMaxOperands> broadcast{};
    std::array<size_t, kMaxOperands> elem_size{};
};

// dst's axes in the order its strides run, outermost first (a stable sort, so a contiguous dst
// keeps its order; size-1 axes count as outermost).
inline std::array<size_t, TensorLayout::MAX_NDIM> dst_order(const TensorLayout& dst) {
    std::array<size_t, TensorLayout::MAX_NDIM> order{};
    for (size_t d = 0; d < dst.ndim; ++d)
        order[d] = d;
    if (dst.is_contiguous())
        return order;
    auto key = [&](size_t d) { return dst[d] == 1 ? ptrdiff_t{0} : dst.stride[d]; };
    std::stable_sort(order.begin(), order.begin() + dst.ndim,
                     [&](size_t a, size_t b) { return key(a) > key(b); });
    return order;
}

// The axes of every operand reordered as dst's strides run (dst_order): elements map one to
// one, so any common order computes the same, and a dst dense in another order (channels-last)
// and the operands laid out like it become one dense row instead of a strided walk.
inline void to_dst_order(std::span<TensorLayout> layouts) {
    const TensorLayout& dst = layouts.back();
    auto order = dst_order(dst);
    bool identity = true;
    for (size_t d = 0; d < dst.ndim; ++d)
        identity = identity && order[d] == d;
    if (identity)
        return;
    std::vector<size_t> perm(order.begin(), order.begin() + dst.ndim);
    for (TensorLayout& l : layouts)
        l = l.dimshuffle(perm);
}

// The fewest outer axes such that along the rest every operand is dense or broadcast; dst
// must be dense there. nullopt when the rows would be a single element (no unit-stride run).
// Rows run in dst's memory order (to_dst_order), which is row-major for a contiguous dst.
inline std::optional<Rows> rows_of(std::span<const TensorLayout> given) {
    Rows r;
    r.operands = given.size();
    std::copy(given.begin(), given.end(), r.layouts.begin());
    std::span<const TensorLayout> layouts(r.layouts.data(), r.operands);
    to_dst_order(std::span(r.layouts.data(), r.operands));
    const TensorLayout& dst = layouts.back();
    size_t split = dst.ndim;
    while (split > 0) {
        bool ok = true;
        for (size_t i = 0; i < layouts.size() && ok; ++i) {
            auto kind = run_kind(layouts[i], split - 1);
            // dst is written, so it must be dense along the rows.
            ok = kind && (i + 1 < layouts.size() || *kind == RunKind::Dense);
        }
        if (!ok)
            break;
        --split;
    }
    r.split = split;
    for (size_t d = split; d < dst.ndim; ++d)
        r.inner *= dst[d];
    for (size_t d = 0; d < split; ++d)
        r.count *= dst[d];
    if (r.inner == 1 && r.count > 1)
        return std::nullopt;
    for (size_t i = 0; i < layouts.size(); ++i) {
        r.broadcast[i] = run_kind(layouts[i], split) == RunKind::Broadcast && r.inner > 1;
        r.elem_size[i] = layouts[i].dtype.size();
    }
    return r;
}

// Longer rows for operands whose rows (rows_of) are short because an input varies along the
// outer axes only within a block that repeats: a per-channel (1, C, 1, 1) input over NCHW makes
// rows of H*W, one run (and one kernel call) per (n, c). Such an input, copied once into a dense
// block of dst's inner axes (its values for the first outer index, which every other repeats),
// is dense along rows of C*H*W, one per n. `outer[d]`: axis d (as given) is one of the rows'
// outer axes, along which the copies repeat (stride 0); `expand[i]`: input i is copied.
struct Expansion {
    std::array<bool, TensorLayout::MAX_NDIM> outer{};
    std::array<bool, kMaxOperands> expand{};
    size_t block = 0;  // elements of one copy
};

// The expansion giving the longest rows of at most max_block elements, over at least min_repeats
// outer rows (fewer, and the copies cost about what the calls saved); nullopt where none makes
// the rows longer. `given` as for rows_of.
inline std::optional<Expansion> expansion_of(std::span<const TensorLayout> given, size_t max_block,
                                             size_t min_repeats) {
    auto rows = rows_of(given);
    if (!rows || rows->inner >= max_block)
        return std::nullopt;
    const Rows& r = *rows;  // layouts in dst's memory order
    const size_t n_in = r.operands - 1;
    const TensorLayout& dst = r.layouts[n_in];
    std::optional<Expansion> best;
    size_t block = r.inner, best_split = r.split;
    for (size_t s = r.split; s-- > 0;) {
        block *= dst[s];
        if (block > max_block || run_kind(dst, s) != RunKind::Dense)
            break;
        Expansion e;
        bool ok = true;
        for (size_t i = 0; i < n_in && ok; ++i) {
            if (run_kind(r.layouts[i], s))
                continue;
            for (size_t d = 0; d < s; ++d)
                ok = ok && (r.layouts[i][d] == 1 || r.layouts[i].stride[d] == 0);
            e.expand[i] = true;
        }
        if (ok) {
            e.block = block;
            best = e;
            best_split = s;
        }
    }
    if (!best)
        return std::nullopt;
    size_t repeats = 1;
    for (size_t d = 0; d < best_split; ++d)
        repeats *= dst[d];
    if (repeats < min_repeats)
        return std::nullopt;
    auto order = dst_order(given.back());
    for (size_t d = 0; d < best_split; ++d)
        best->outer[order[d]] = true;
    return best;
}

// Calls f(off, n, count, step) for the runs covering elements [begin, end) of dst in rows_of's
// order, several whole rows at a time where they follow one another along the innermost outer
// axis: `count` runs of n elements, off[i] the element offset of operand i's first element of the
// first run (for a broadcast operand, of its one value), step[i] how many elements later operand
// i's next run starts. A row cut by begin or end is a batch of its own (count 1). A callee that
// takes the batch in one call saves a call per row: a per-channel operand over NCHW with 7 x 7
// images is a row of 49 elements (x86 Elemwise, elemwise_hwy.h).
template <class F>
void for_each_row_batch(const Rows& r, size_t begin, size_t end, F&& f) {
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    size_t row = begin / r.inner, col = begin % r.inner;
    // The row's offset in each operand, kept up to date as an odometer over the outer axes.
    std::array<ptrdiff_t, kMaxOperands> off{}, step{};
    for (size_t d = r.split, rest = row; d-- > 0;) {
        idx[d] = rest % r.layouts[0][d];
        rest /= r.layouts[0][d];
        for (size_t i = 0; i < r.operands; ++i)
            off[i] += static_cast<ptrdiff_t>(idx[d]) * r.layouts[i].stride[d];
    }
    const size_t last = r.split - 1;  // the innermost outer axis, where r.split > 0
    if (r.split > 0)
        for (size_t i = 0; i < r.operands; ++i)
            step[i] = r.layouts[i].stride[last];
    std::array<ptrdiff_t, kMaxOperands> run{};
    for (size_t pos = begin; pos < end;) {
        size_t n = std::min(r.inner - col, end - pos), count = 1;
        if (r.split > 0 && col == 0 && n == r.inner)
            count = std::min(r.layouts[0][last] - idx[last], (end - pos) / r.inner);
        for (size_t i = 0; i < r.operands; ++i)
            run[i] = off[i] + (r.broadcast[i] ? 0 : static_cast<ptrdiff_t>(col));
        f(std::span<const ptrdiff_t>(run.data(), r.operands), n, count,
          std::span<const ptrdiff_t>(step.data(), r.operands));
        pos += n * count;
        col = 0;
        if (r.split == 0)
            continue;
        // count rows along the last axis (never past its end), then carry into the axes above
        for (size_t i = 0; i < r.operands; ++i)
            off[i] += step[i] * static_cast<ptrdiff_t>(count);
        idx[last] += count;
        if (idx[last] < r.layouts[0][last])
            continue;
        for (size_t d = r.split; d-- > 0;) {
            for (size_t i = 0; i < r.operands; ++i)
                off[i] -= r.layouts[i].stride[d] * static_cast<ptrdiff_t>(r.layouts[0][d]);
            idx[d] = 0;
            if (d == 0)
                break;
            for (size_t i = 0; i < r.operands; ++i)
                off[i] += r.layouts[i].stride[d - 1];
            if (++idx[d - 1] < r.layouts[0][d - 1])
                break;
        }
    }
}

// Calls f(off, n) for the runs covering elements [begin, end) of dst in rows_of's order, row by
// row: off[i] is the element offset of operand i's first element of the run (for a broadcast
// operand, of its one value), n the run's length.
template <class F>
void for_each_run(const Rows& r, size_t begin, size_t end, F&& f) {
    std::array<ptrdiff_t, kMaxOperands> at{};
    for_each_row_batch(r, begin, end,
                       [&](std::span<const ptrdiff_t> off, size_t n, size_t count,
                           std::span<const ptrdiff_t> step) {
                           for (size_t c = 0; c < count; ++c) {
                               for (size_t i = 0; i < off.size(); ++i)
                                   at[i] = off[i] + static_cast<ptrdiff_t>(c) * step[i];
                               f(std::span<const ptrdiff_t>(at.data(), off.size()), n);
                           }
                       });
}

// Element e of a tensor of elements of `size` bytes at base.
inline std::byte* element_at(const void* base, ptrdiff_t e, size_t size) {
    return static_cast<std::byte*>(const_cast<void*>(base)) + e * static_cast<ptrdiff_t>(size);
}

// Calls f(begin, end) on disjoint element ranges covering dst, across OpenMP threads when the
// tensor is large (kParallelGrain elements per thread). Threads take whole cache lines of dst (64
// elements of at least a byte each), so that they share none.
template <class F>
void parallel_for_rows(const Rows& r, F&& f) {
    constexpr size_t kLine = 64;
    size_t total = r.inner * r.count;
    parallel_ranges((total + kLine - 1) / kLine, total, kParallelGrain,
                    [&](size_t b, size_t e) { f(b * kLine, std::min(total, e * kLine)); });
}

}  // namespace neomeg::dnn::x86
