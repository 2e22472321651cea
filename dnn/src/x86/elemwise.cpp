// Elemwise on x86: the modes and dtypes that elemwise_hwy.cpp and elemwise_int_hwy.cpp vectorise
// (float32, int32, comparisons into bool, logical bool, COND over 32-bit data) and, through
// float32, the float modes on float16 and bfloat16 (elemwise_lowp.cpp), for any layouts
// that split into rows whose every operand is either dense (unit stride) or one broadcast value
// along the row: same-shape contiguous tensors (one row), scalars, row and column broadcasts, a
// per-channel (1, C, 1, 1) operand over NCHW, padded or reversed rows of the outer axes. Rows are
// walked with each operand's own strides over the outer axes. Large tensors split across OpenMP
// threads in chunks of at least kParallelGrain elements, so small ones stay on the calling thread.
// A dst dense in another axis order (channels-last) runs in its memory order (dense_rows.h).
// Where the operands disagree (a channels-last and a row-major tensor of one shape), each operand
// without a unit-stride run along dst's memory order is first copied into the workspace in dst's
// layout (relayout_copy's tiled transpose), and the loops run on the copies. Where the rows are
// short because an input repeats in a small block (per-channel over NCHW: a call per H*W run),
// that input is first copied into one dense block that every row repeats (expansion_of). Other
// dtypes and modes, and layouts still without a unit-stride run, go to naive.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "neomeg/dnn/operators/elemwise.h"
#include "src/x86/dense_rows.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_lowp.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

// Elements [begin, end) of dst in row-major order, run by run; lowp: the 16-bit float kernels.
// Rows that follow one another go to the float32 loops in one call (elemwise_run_rows).
void run_range(elemwise::Mode mode, DType data, bool lowp, const Rows& r,
               std::span<const TensorND> in, const TensorND& out, size_t begin, size_t end) {
    size_t n_in = r.operands - 1;
    std::array<ElemwiseSrc, kMaxOperands> src;
    for_each_row_batch(
            r, begin, end,
            [&](std::span<const ptrdiff_t> off, size_t n, size_t count,
                std::span<const ptrdiff_t> step) {
                auto at = [&](size_t i, size_t c) {
                    return element_at(i < n_in ? in[i].raw_ptr() : out.raw_ptr(),
                                      off[i] + static_cast<ptrdiff_t>(c) * step[i], r.elem_size[i]);
                };
                if (count > 1 && !lowp) {
                    ElemwiseRows rows{count, {}, step[n_in]};
                    for (size_t i = 0; i < n_in; ++i) {
                        src[i] = {at(i, 0), r.broadcast[i]};
                        rows.step[i] = step[i];
                    }
                    if (elemwise_run_rows(mode, data, out.layout.dtype, src.data(), at(n_in, 0), n,
                                          rows))
                        return;
                }
                for (size_t c = 0; c < count; ++c) {
                    for (size_t i = 0; i < n_in; ++i)
                        src[i] = {at(i, c), r.broadcast[i]};
                    if (lowp)
                        elemwise_lowp_run(mode, data, src.data(), at(n_in, c), n);
                    else
                        elemwise_run(mode, data, out.layout.dtype, src.data(), at(n_in, c), n);
                }
            });
}

constexpr size_t kAlign = 64;
// Expansion (dense_rows.h): a copy of at most kMaxBlock elements stays in L1 beside the rows; over
// fewer than kMinRepeats rows the copies cost about what the longer rows save.
constexpr size_t kMaxBlock = 4096;
constexpr size_t kMinRepeats = 4;

size_t aligned(size_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Whether input `in` is copied into dst's layout before the loops: dst is dense, and `in`
// (broadcast to dst) has no unit-stride run along dst's memory order (a row-major operand of a
// channels-last dst, or a broadcast one whose repeated axis is innermost there).
bool staged(const TensorLayout& in, const TensorLayout& dst) {
    auto [lo, hi] = dst.span_elems();
    if (lo != 0 || static_cast<size_t>(hi) != dst.total_nr_elems())
        return false;
    std::array<TensorLayout, 2> pair{in.broadcast(dst), dst};
    return !rows_of(pair);
}

// Every operand contiguous and of dst's shape: the rows are the whole tensor, so there is
// nothing to expand or stage. The common case, and for small tensors the planning below (rows_of
// passes over copies of every layout) costs more than the loop.
bool plain_operands(std::span<const TensorLayout> inputs, const TensorLayout& dst) {
    if (!dst.is_contiguous())
        return false;
    for (const TensorLayout& in : inputs)
        if (!in.eq_shape(dst) || !in.is_contiguous())
            return false;
    return true;
}

// The last result computed for one call's layouts (its inputs as given, then dst) and mode:
// planning a broadcast (rows_of over copies of every layout, the expansion and staging checks)
// cost 0.8 us of a 2.6 us per-channel add on (2, 4, 3, 3), a third of the call, and an eager
// loop repeats the same layouts call after call. A size-1 axis's stride is not compared
// (eq_layout): it addresses nothing, in the plan as in the tensor.
template <class V>
class LastPlan {
public:
    const V* find(elemwise::Mode mode, std::span<const TensorLayout> inputs,
                  const TensorLayout& dst) const {
        if (!m_valid || mode != m_mode || inputs.size() + 1 != m_count ||
            !dst.eq_layout(m_layouts[inputs.size()]))
            return nullptr;
        for (size_t i = 0; i < inputs.size(); ++i)
            if (!inputs[i].eq_layout(m_layouts[i]))
                return nullptr;
        return &m_value;
    }
    const V& keep(elemwise::Mode mode, std::span<const TensorLayout> inputs,
                  const TensorLayout& dst, V value) {
        m_mode = mode;
        m_count = inputs.size() + 1;
        std::copy(inputs.begin(), inputs.end(), m_layouts.begin());
        m_layouts[inputs.size()] = dst;
        m_value = std::move(value);
        m_valid = true;
        return m_value;
    }

private:
    bool m_valid = false;
    elemwise::Mode m_mode{};
    size_t m_count = 0;
    std::array<TensorLayout, kMaxOperands> m_layouts;
    V m_value{};
};

class ElemwiseImpl final : public LoopKernel<Elemwise> {
public:
    using LoopKernel::LoopKernel;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        size_t naive = LoopKernel::get_workspace_in_bytes(inputs, outputs);
        if (plain_operands(inputs, outputs[0]))
            return naive;
        // Its staging check passes rows_of over broadcast copies of every layout, 0.3 us of an
        // eager `x + 1.0` on 4x4 (kept plans spare do_exec the same work), and an eager loop
        // asks again with the same layouts.
        if (inputs.size() >= kMaxOperands)
            return broadcast_workspace(inputs, outputs[0], naive);
        if (auto* known = m_workspace.find(m_param.mode, inputs, outputs[0]))
            return *known;
        return m_workspace.keep(m_param.mode, inputs, outputs[0],
                                broadcast_workspace(inputs, outputs[0], naive));
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorLayout& dst_l = outputs[0].layout;
        std::array<TensorLayout, kMaxOperands> in_layouts;
        for (size_t i = 0; i < inputs.size(); ++i)
            in_layouts[i] = inputs[i].layout;
        if (plain_operands(std::span(in_layouts).first(inputs.size()), dst_l)) {
            if (!run_loops(inputs, outputs))
                run_naive(inputs, outputs, ws);
            return;
        }
        std::array<TensorND, kMaxOperands> copies;
        if (auto e = expansion(std::span(in_layouts).first(inputs.size()), dst_l)) {
            expand(*e, inputs, dst_l, ws, copies);
            if (run_loops(std::span<const TensorND>(copies.data(), inputs.size()), outputs))
                return;
        }
        if (run_loops(inputs, outputs))
            return;
        if (inputs.size() < kMaxOperands &&
            needs_staging(std::span(in_layouts).first(inputs.size()), dst_l)) {
            std::byte* at = ws.ptr;
            for (size_t i = 0; i < inputs.size(); ++i) {
                copies[i] = inputs[i];
                if (!staged(inputs[i].layout, dst_l))
                    continue;
                TensorLayout l = dst_l;
                l.dtype = inputs[i].layout.dtype;
                copies[i] = TensorND(at, l);
                at += aligned(l.access_bytes());
                relayout_copy(TensorND(inputs[i].raw_ptr(), inputs[i].layout.broadcast(dst_l)),
                              copies[i]);
            }
            if (run_loops(std::span<const TensorND>(copies.data(), inputs.size()), outputs))
                return;
        }
        run_naive(inputs, outputs, ws);
    }

private:
    // The workspace where the operands are not all plain: expanded blocks or staged copies.
    size_t broadcast_workspace(std::span<const TensorLayout> inputs, const TensorLayout& dst,
                               size_t naive) {
        if (auto e = expansion(inputs, dst)) {
            size_t bytes = 0;
            for (size_t i = 0; i < inputs.size(); ++i)
                if (e->expand[i])
                    bytes += aligned(inputs[i].dtype.size(e->block));
            return std::max(naive, bytes);
        }
        if (!needs_staging(inputs, dst))
            return naive;
        size_t bytes = 0;
        for (const TensorLayout& in : inputs)
            if (staged(in, dst))
                bytes += aligned(in.dtype.size(dst.total_nr_elems()));
        return std::max(naive, bytes);
    }

    std::optional<Expansion> expansion(std::span<const TensorLayout> inputs,
                                       const TensorLayout& dst) {
        if (inputs.size() >= kMaxOperands || dst.is_empty() || !supported(inputs, dst))
            return std::nullopt;
        if (auto* known = m_expansion.find(m_param.mode, inputs, dst))
            return *known;
        std::array<TensorLayout, kMaxOperands> layouts;
        for (size_t i = 0; i < inputs.size(); ++i)
            layouts[i] = inputs[i].broadcast(dst);
        layouts[inputs.size()] = dst;
        return m_expansion.keep(
                m_param.mode, inputs, dst,
                expansion_of(std::span(layouts).first(inputs.size() + 1), kMaxBlock, kMinRepeats));
    }

    // copies[i]: input i, or for an expanded one its block in the workspace, viewed with stride 0
    // along the outer axes. The block is dst's layout without the outer axes, dense as dst is
    // along the rest, so it spans [0, e.block) elements.
    static void expand(const Expansion& e, std::span<const TensorND> inputs,
                       const TensorLayout& dst, Workspace ws,
                       std::array<TensorND, kMaxOperands>& copies) {
        std::byte* at = ws.ptr;
        for (size_t i = 0; i < inputs.size(); ++i) {
            copies[i] = inputs[i];
            if (!e.expand[i])
                continue;
            TensorLayout src = inputs[i].layout.broadcast(dst), block = dst, view = dst;
            block.dtype = view.dtype = src.dtype;
            for (size_t d = 0; d < dst.ndim; ++d) {
                if (!e.outer[d])
                    continue;
                src.shape[d] = block.shape[d] = 1;
                view.stride[d] = 0;
            }
            relayout_copy(TensorND(inputs[i].raw_ptr(), src), TensorND(at, block));
            copies[i] = TensorND(at, view);
            at += aligned(src.dtype.size(e.block));
        }
    }

    // The loops' layouts fail as given (no common unit-stride run) but some operand would be
    // staged and the op has loops for its dtypes.
    bool needs_staging(std::span<const TensorLayout> inputs, const TensorLayout& dst) {
        if (inputs.size() >= kMaxOperands || dst.is_empty() || !supported(inputs, dst))
            return false;
        std::array<TensorLayout, kMaxOperands> layouts;
        for (size_t i = 0; i < inputs.size(); ++i)
            layouts[i] = inputs[i].broadcast(dst);
        layouts[inputs.size()] = dst;
        if (rows_of(std::span(layouts).first(inputs.size() + 1)))
            return false;
        for (const TensorLayout& in : inputs)
            if (staged(in, dst))
                return true;
        return false;
    }

    bool supported(std::span<const TensorLayout> inputs, const TensorLayout& dst) const {
        DType data = inputs[elemwise::data_input(m_param.mode)].dtype;
        return elemwise_supported(m_param.mode, data, dst.dtype) ||
               elemwise_lowp_supported(m_param.mode, data, dst.dtype);
    }

    bool run_loops(std::span<const TensorND> inputs, std::span<const TensorND> outputs) {
        DType data = inputs[elemwise::data_input(m_param.mode)].layout.dtype;
        if (auto rows = plan(inputs, outputs[0])) {
            bool lowp = elemwise_lowp_supported(m_param.mode, data, outputs[0].layout.dtype);
            parallel_for_rows(*rows, [&](size_t b, size_t e) {
                run_range(m_param.mode, data, lowp, *rows, inputs, outputs[0], b, e);
            });
            m_last = m_target.c_str();
            return true;
        }
        return false;
    }

    std::optional<Rows> plan(std::span<const TensorND> inputs, const TensorND& dst) {
        DType data = inputs[elemwise::data_input(m_param.mode)].layout.dtype;
        if (!elemwise_supported(m_param.mode, data, dst.layout.dtype) &&
            !elemwise_lowp_supported(m_param.mode, data, dst.layout.dtype))
            return std::nullopt;
        std::array<TensorLayout, kMaxOperands> given;
        for (size_t i = 0; i < inputs.size(); ++i) {
            // COND's condition is bool; every other input is of the data dtype.
            DType want = i < elemwise::data_input(m_param.mode) ? DType(dtype::Bool) : data;
            if (inputs[i].layout.dtype != want)
                return std::nullopt;
            given[i] = inputs[i].layout;
        }
        if (dst.layout.is_empty())
            return std::nullopt;
        std::span<const TensorLayout> in_layouts(given.data(), inputs.size());
        // The expansion's copies and the inputs as given are two plans of one call: two memos.
        for (auto* memo : {&m_rows[0], &m_rows[1]})
            if (auto* known = memo->find(m_param.mode, in_layouts, dst.layout))
                return *known;
        std::array<TensorLayout, kMaxOperands> layouts;
        for (size_t i = 0; i < inputs.size(); ++i)
            layouts[i] = given[i].broadcast(dst.layout);
        layouts[inputs.size()] = dst.layout;
        auto rows = rows_of(std::span(layouts).first(inputs.size() + 1));
        m_rows[m_next_rows].keep(m_param.mode, in_layouts, dst.layout, rows);
        m_next_rows ^= 1;
        if (rows && !m_target_known) {
            m_target = str_cat("hwy:", elemwise_target());
            m_target_known = true;
        }
        return rows;
    }

    std::string m_target;
    bool m_target_known = false;
    LastPlan<std::optional<Expansion>> m_expansion;
    std::array<LastPlan<std::optional<Rows>>, 2> m_rows;
    LastPlan<size_t> m_workspace;
    size_t m_next_rows = 0;
};

}  // namespace
NM_REGISTER_X86(Elemwise, ElemwiseImpl);
}  // namespace neomeg::dnn::x86
