// Softmax and log-softmax, forward and backward, on x86, float32 (bfloat16 and float16 between
// conversions, lowp_plan.h), any rank, any axis: always our loops (softmax_hwy.h), the tensors
// seen as dense (outer, len, inner), staged dense when strided (but for dense rows evenly spaced,
// such as x[:, :1000], which run where they are). oneDNN 2.6's softmax is no faster
// anywhere and wrong in places. Its JIT forward (along the last axis) takes the row maximum with
// vmaxps, which drops a NaN, so a row holding a NaN or +inf came out 0 beside a NaN where naive and
// PyTorch give the row NaN; its log-softmax's vectorised log is off by about 2e-6 relative
// (log_softmax([0, 0]) = -0.69314575 instead of -0.69314718, what MegEngine, PyTorch and naive
// give), visible in every printed loss, where ours runs in float32 lanes within 1 ULP of the exact
// value (softmax_hwy.cpp's ExpSum); its backwards are `ref:any` below AVX-512, and on AVX-512 its
// JIT log-softmax backward took 1.4-1.9x our loop's time, its softmax backward 1.1-1.2x
// (docs/x86-backend-log.md, "The silent slow paths on AVX2: an audit"). Other dtypes and empty
// tensors go to naive.
#include <cstdlib>
#include <optional>
#include <vector>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/softmax_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// The axis (non-negative), or -1 where the kernel declines.
int axis_of(int32_t axis, std::span<const TensorLayout> layouts) {
    for (const TensorLayout& l : layouts)
        if (l.dtype != dtype::Float32 || l.is_empty() || l.ndim == 0)
            return -1;
    auto n = static_cast<int32_t>(layouts[0].ndim);
    if (axis < -n || axis >= n)
        return -1;
    return axis < 0 ? axis + n : axis;
}

// The distance in elements between consecutive rows of l around `axis` where every row is dense
// (unit stride along the axis, size 1 after it) and the rows are evenly spaced (the axes before
// it merge into one): x[:, :1000], a reversed batch x[::-1]. nullopt otherwise.
std::optional<ptrdiff_t> row_stride(const TensorLayout& l, size_t axis) {
    for (size_t k = axis + 1; k < l.ndim; ++k)
        if (l[k] != 1)
            return std::nullopt;
    if (l[axis] > 1 && l.stride[axis] != 1)
        return std::nullopt;
    std::optional<ptrdiff_t> row;
    ptrdiff_t next = 0;  // the stride the next outer axis needs to merge
    for (size_t k = axis; k-- > 0;) {
        if (l[k] == 1)
            continue;
        if (row && l.stride[k] != next)
            return std::nullopt;
        if (!row)
            row = l.stride[k];
        next = l.stride[k] * static_cast<ptrdiff_t>(l[k]);
    }
    return row ? row : std::optional<ptrdiff_t>(static_cast<ptrdiff_t>(l[axis]));
}

// Our loops on the call's float32 tensors (inputs, then the output), each seen as dense
// (outer, len, inner) around the axis; strided ones are copied to and from dense buffers in the
// workspace.
class LoopPlan final : public Plan {
public:
    LoopPlan(std::span<const TensorLayout> layouts, size_t axis, bool log, bool backward)
        : m_log(log), m_backward(backward), m_count(layouts.size()) {
        const TensorLayout& l = layouts[0];
        for (size_t i = 0; i < l.ndim; ++i)
            (i < axis ? m_outer : i == axis ? m_len : m_inner) *= l[i];
        for (size_t i = 0; i < m_count; ++i) {
            m_row[i] = static_cast<ptrdiff_t>(m_len);
            auto rows = m_inner == 1 ? row_stride(layouts[i], axis) : std::nullopt;
            // The output's rows must not overlap (an input's may: a broadcast row).
            if (rows && i + 1 == m_count && std::abs(*rows) < static_cast<ptrdiff_t>(m_len))
                rows.reset();
            if (rows)
                m_row[i] = *rows;
            m_stage[i] = layouts[i].is_contiguous() || rows
                                 ? kDirect
                                 : m_ws.add(layouts[i].total_nr_elems() * sizeof(float));
        }
    }

    size_t workspace_in_bytes() const override { return m_ws.total(); }
    const char* name() const override { return "loop:softmax"; }

    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream&) override {
        std::array<float*, 3> p{};
        for (size_t i = 0; i < m_count; ++i) {
            bool direct = m_stage[i] == kDirect;
            p[i] = static_cast<float*>(direct ? tensors[i].raw_ptr() : ws.ptr + m_stage[i]);
            if (!direct && i + 1 < m_count)
                copy_to_dense(tensors[i], p[i]);
        }
        compute(p[0], p[1], p[m_count - 1]);
        if (m_stage[m_count - 1] != kDirect)
            copy_from_dense(p[m_count - 1], tensors[m_count - 1]);
    }

private:
    static constexpr size_t kDirect = ~size_t{0};
    static constexpr size_t kExpCost = 8;

    // Forward: a = x, out = y; backward: a = y, b = dy, out = dx.
    void compute(const float* a, const float* b, float* out) const {
        const size_t len = m_len, inner = m_inner;
        // An element with an exp (either forward, log-softmax's backward) costs several simple
        // float operations, softmax's backward (two passes) a few: unweighted, 64 rows of 1000
        // stayed on one thread, at half oneDNN's speed on two.
        const size_t work = m_outer * len * inner * (m_backward && !m_log ? 4 : kExpCost);
        if (inner == 1) {
            parallel_ranges(m_outer, work, kParallelGrain, [&](size_t rb, size_t re) {
                const ptrdiff_t ra = m_row[0], rb_ = m_row[1], ro = m_row[m_count - 1];
                if (m_backward)
                    softmax_grad_rows(a, ra, b, rb_, out, ro, rb, re, len, m_log);
                else
                    softmax_rows(a, ra, out, ro, rb, re, len, m_log);
            });
            return;
        }
        // Units of (outer index, kSoftmaxColumns columns), so that an axis-0 softmax (outer == 1)
        // still splits over threads; a thread's units of one outer index are one call, whose
        // strips then take up to four vectors side by side (softmax_hwy.cpp).
        const size_t blocks = (inner + kSoftmaxColumns - 1) / kSoftmaxColumns;
        parallel_ranges(m_outer * blocks, work, kParallelGrain, [&](size_t ub, size_t ue) {
            for (size_t u = ub; u < ue;) {
                const size_t o = u / blocks, last = std::min(ue, (o + 1) * blocks);
                const size_t off = o * len * inner, cb = u % blocks * kSoftmaxColumns;
                const size_t ce = std::min(inner, (last - o * blocks) * kSoftmaxColumns);
                if (m_backward)
                    softmax_grad_cols(a + off, b + off, out + off, len, inner, cb, ce, m_log);
                else
                    softmax_cols(a + off, out + off, len, inner, cb, ce, m_log);
                u = last;
            }
        });
    }

    bool m_log, m_backward;
    size_t m_count;
    size_t m_outer = 1, m_len = 1, m_inner = 1;
    std::array<size_t, 3> m_stage{};
    // Each tensor's row stride in elements where inner == 1 (len for a dense or staged one).
    std::array<ptrdiff_t, 3> m_row{};
    WorkspacePlan m_ws;
};

// Our loops for every float32 call (see the file's comment).
template <class Op, bool kLog, bool kBackward>
class SoftmaxImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        std::vector<TensorLayout> all(in.begin(), in.end());
        all.push_back(out[0]);
        int axis = axis_of(this->m_param.axis, all);
        if (axis < 0)
            return nullptr;
        return std::make_unique<LoopPlan>(all, static_cast<size_t>(axis), kLog, kBackward);
    }
};

using SoftmaxForwardImpl = SoftmaxImpl<SoftmaxForward, false, false>;
using SoftmaxBackwardImpl = SoftmaxImpl<SoftmaxBackward, false, true>;
using LogSoftmaxForwardImpl = SoftmaxImpl<LogSoftmaxForward, true, false>;
using LogSoftmaxBackwardImpl = SoftmaxImpl<LogSoftmaxBackward, true, true>;

}  // namespace
NM_REGISTER_X86(SoftmaxForward, SoftmaxForwardImpl);
NM_REGISTER_X86(SoftmaxBackward, SoftmaxBackwardImpl);
NM_REGISTER_X86(LogSoftmaxForward, LogSoftmaxForwardImpl);
NM_REGISTER_X86(LogSoftmaxBackward, LogSoftmaxBackwardImpl);
}  // namespace neomeg::dnn::x86
