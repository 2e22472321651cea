// Elemwise on x86: the modes and dtypes that elemwise_hwy.cpp and elemwise_int_hwy.cpp vectorise
// (float32, int32, comparisons into bool, logical bool), for any layouts that split into
// rows whose every operand is either dense (unit stride) or one broadcast value along the row:
// same-shape contiguous tensors (one row), scalars, row and column broadcasts, a per-channel
// (1, C, 1, 1) operand over NCHW, padded or reversed rows of the outer axes. Rows are walked with
// each operand's own strides over the outer axes. Large tensors split across OpenMP threads in
// chunks of at least kParallelGrain elements, so small ones stay on the calling thread. Other
// dtypes and modes (COND, whose inputs differ in dtype), and layouts without a unit-stride run (a
// transposed operand), go to naive.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "src/x86/elemwise_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

constexpr size_t kMaxOperands = 5;  // four inputs and dst
enum class RunKind { Dense, Broadcast };

// How `l` (of dst's shape) is laid out along axes [from, ndim): dense row-major with unit
// innermost stride, or stride 0 throughout; size-1 axes address nothing and fit both.
std::optional<RunKind> run_kind(const TensorLayout& l, size_t from) {
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

// The fewest outer axes such that along the rest every operand is dense or broadcast; dst
// must be dense there. nullopt when the rows would be a single element (no unit-stride run).
std::optional<Rows> rows_of(std::span<const TensorLayout> layouts) {
    const TensorLayout& dst = layouts.back();
    Rows r;
    r.operands = layouts.size();
    std::copy(layouts.begin(), layouts.end(), r.layouts.begin());
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

// Elements [begin, end) of dst in row-major order, row by row.
void run_range(elemwise::Mode mode, DType data, const Rows& r, std::span<const TensorND> in,
               const TensorND& out, size_t begin, size_t end) {
    size_t n_in = r.operands - 1;
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    size_t row = begin / r.inner, col = begin % r.inner;
    // The row's offset in each operand, kept up to date as an odometer over the outer axes.
    std::array<ptrdiff_t, kMaxOperands> off{};
    for (size_t d = r.split, rest = row; d-- > 0;) {
        idx[d] = rest % r.layouts[0][d];
        rest /= r.layouts[0][d];
        for (size_t i = 0; i < r.operands; ++i)
            off[i] += static_cast<ptrdiff_t>(idx[d]) * r.layouts[i].stride[d];
    }
    std::array<ElemwiseSrc, kMaxOperands> src;
    // Element `e` of operand i, counted from its base pointer.
    const auto at = [&](const void* base, size_t i, ptrdiff_t e) {
        return static_cast<const std::byte*>(base) + e * static_cast<ptrdiff_t>(r.elem_size[i]);
    };
    auto c = static_cast<ptrdiff_t>(col);
    for (size_t pos = begin; pos < end;) {
        size_t n = std::min(r.inner - col, end - pos);
        for (size_t i = 0; i < n_in; ++i)
            src[i] = {at(in[i].raw_ptr(), i, off[i] + (r.broadcast[i] ? 0 : c)), r.broadcast[i]};
        auto* dst = const_cast<std::byte*>(at(out.raw_ptr(), n_in, off[n_in] + c));
        elemwise_run(mode, data, out.layout.dtype, src.data(), dst, n);
        pos += n;
        col = 0;
        c = 0;
        for (size_t d = r.split; d-- > 0;) {
            for (size_t i = 0; i < r.operands; ++i)
                off[i] += r.layouts[i].stride[d];
            if (++idx[d] < r.layouts[0][d])
                break;
            for (size_t i = 0; i < r.operands; ++i)
                off[i] -= r.layouts[i].stride[d] * static_cast<ptrdiff_t>(r.layouts[0][d]);
            idx[d] = 0;
        }
    }
}

class ElemwiseImpl final : public LoopKernel<Elemwise> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        DType data = inputs[0].layout.dtype;
        if (auto rows = plan(inputs, outputs[0])) {
            size_t total = rows->inner * rows->count;
            // Threads take whole cache lines of dst (64 elements of at least a byte each), so
            // that they share none.
            constexpr size_t kLine = 64;
            parallel_ranges((total + kLine - 1) / kLine, total, kParallelGrain,
                            [&](size_t b, size_t e) {
                                run_range(m_param.mode, data, *rows, inputs, outputs[0], b * kLine,
                                          std::min(total, e * kLine));
                            });
            m_last = m_target.c_str();
            return;
        }
        run_naive(inputs, outputs, ws);
    }

private:
    std::optional<Rows> plan(std::span<const TensorND> inputs, const TensorND& dst) {
        DType data = inputs[0].layout.dtype;
        if (!elemwise_supported(m_param.mode, data, dst.layout.dtype))
            return std::nullopt;
        std::array<TensorLayout, kMaxOperands> layouts;
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (inputs[i].layout.dtype != data)
                return std::nullopt;
            layouts[i] = inputs[i].layout.broadcast(dst.layout);
        }
        layouts[inputs.size()] = dst.layout;
        if (dst.layout.is_empty())
            return std::nullopt;
        auto rows = rows_of(std::span(layouts).first(inputs.size() + 1));
        if (rows && !m_target_known) {
            m_target = str_cat("hwy:", elemwise_target());
            m_target_known = true;
        }
        return rows;
    }

    std::string m_target;
    bool m_target_known = false;
};

}  // namespace
NM_REGISTER_X86(Elemwise, ElemwiseImpl);
}  // namespace neomeg::dnn::x86
