// LSTMForward and LSTMBackward, float32, contiguous tensors: the products are oneDNN's sgemm and
// the elementwise part of each step our own loop (lstm_hwy.h). The forward's input projection is
// one product over all T * B rows, written straight into the reserve's gate slots; each step then
// adds h W_hh^T there (one (B, H) x (H, 4H) product) and runs the gates, which write the next
// step's h and c into its reserve row, where its product reads h. The backward runs the gates'
// gradients step by step (and dh = dg W_hh, one small product a step), then dx, dW_ih and dW_hh
// as one product each over all T * B rows (dW_hh reads the h of every step from the reserve) and
// dbias as one column sum. The step-by-step parts split the batch across threads: its rows are
// independent sequences, so each thread runs every step for its rows without waiting for the
// other's (one small sgemm a step each, on that thread); the products over all rows thread inside
// oneDNN.
//
// oneDNN 2.6's LSTM primitive (vanilla_lstm) was not tried: its workspace is its own layout, not
// the operator's reserve, and its weights want a reorder to ldigo (gates i, f, c~, o) per call.
// Strided inputs are copied dense first (Staging); strided outputs, empty tensors and sizes past
// int's range go to naive.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "neomeg/dnn/operators/rnn.h"
#include "src/x86/all_contiguous.h"
#include "src/x86/dense_gemm.h"
#include "src/x86/kernel.h"
#include "src/x86/lstm_hwy.h"
#include "src/x86/parallel.h"
#include "src/x86/transpose_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

using dense_gemm::gemm;

struct Sizes {
    size_t t, b, i, h;
};

bool takes(std::span<const TensorLayout> in, std::span<const TensorLayout> out) {
    for (auto ls : {in, out})
        for (const TensorLayout& l : ls)
            if (l.dtype != dtype::Float32 || l.is_empty() || l.total_nr_elems() > size_t(INT_MAX))
                return false;
    return all_contiguous(out);
}

// Dense copies, in the workspace, of the inputs that are not contiguous: the gradient of a sum
// reaches dy broadcast (stride 0), a bidirectional layer's dy is a column slice of the two
// directions' gradient, and a batch-first x is a transposed view.
class Staging {
public:
    explicit Staging(std::span<const TensorLayout> in) : m_offset(in.size(), kDense) {
        for (size_t i = 0; i < in.size(); ++i)
            if (!in[i].is_contiguous()) {
                m_offset[i] = m_bytes;
                m_bytes += (in[i].total_nr_elems() * sizeof(float) + 63) / 64 * 64;
            }
    }
    size_t bytes() const { return m_bytes; }
    // Input i's elements in row-major order: the tensor itself, or its copy at `ws`.
    const float* get(std::span<const TensorND> t, size_t i, std::byte* ws) const {
        if (m_offset[i] == kDense)
            return t[i].ptr<float>();
        copy_to_dense(t[i], ws + m_offset[i]);
        return reinterpret_cast<const float*>(ws + m_offset[i]);
    }

private:
    static constexpr size_t kDense = ~size_t(0);
    std::vector<size_t> m_offset;
    size_t m_bytes = 0;
};

// The step at position s of the order the recurrence takes.
size_t step_time(size_t s, size_t t, bool reverse) {
    return reverse ? t - 1 - s : s;
}

// tensors: x, h0, c0, w_ih, w_hh[, bias], y, hn, cn, reserve.
class ForwardPlan final : public Plan {
public:
    ForwardPlan(Sizes z, bool bias, bool reverse, Staging staging)
        : m_z(z), m_bias(bias), m_reverse(reverse), m_staging(std::move(staging)) {}
    size_t workspace_in_bytes() const override { return m_staging.bytes() + w_hh_t_bytes(); }
    const char* name() const override { return "sgemm+hwy"; }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream&) override {
        const auto [steps, b, isz, hs] = m_z;
        const long g4 = long(4 * hs), ld = long(7 * hs), rows = long(steps * b);
        const float *x = m_staging.get(t, 0, ws.ptr), *h0 = m_staging.get(t, 1, ws.ptr),
                    *c0 = m_staging.get(t, 2, ws.ptr), *w_ih = m_staging.get(t, 3, ws.ptr),
                    *w_hh = m_staging.get(t, 4, ws.ptr);
        const float* bias = m_bias ? m_staging.get(t, 5, ws.ptr) : nullptr;
        size_t o = m_bias ? 6 : 5;
        float *y = t[o].ptr<float>(), *hn = t[o + 1].ptr<float>(), *cn = t[o + 2].ptr<float>(),
              *res = t[o + 3].ptr<float>();
        gemm('N', 'T', rows, g4, long(isz), x, long(isz), w_ih, long(isz), 0.f, res, ld);
        // sgemm reads B about 25% faster as (K, N) than transposed; over a few steps that pays
        // for turning W_hh into W_hh^T once.
        char w_hh_op = 'T';
        long ld_w_hh = long(hs);
        if (w_hh_t_bytes()) {
            auto* w_hh_t = reinterpret_cast<float*>(ws.ptr + m_staging.bytes());
            transpose_u32(reinterpret_cast<const uint32_t*>(w_hh), long(hs), 4 * hs, hs,
                          reinterpret_cast<uint32_t*>(w_hh_t), g4, false);
            w_hh = w_hh_t;
            w_hh_op = 'N';
            ld_w_hh = g4;
        }
        auto row = [&](size_t time) { return res + time * b * ld; };
        float* first = row(step_time(0, steps, m_reverse));
        for (size_t r = 0; r < b; ++r) {
            std::copy_n(h0 + r * hs, hs, first + r * ld + 4 * hs);
            std::copy_n(c0 + r * hs, hs, first + r * ld + 5 * hs);
        }
        // The batch's rows are independent sequences: each thread runs the whole recurrence for
        // its rows, with no barrier between steps (the sgemm inside stays on that thread).
        parallel_ranges(b, steps * b * g4 * hs, kParallelGrain, [&](size_t r0, size_t r1) {
            const long m = long(r1 - r0);
            for (size_t s = 0; s < steps; ++s) {
                size_t time = step_time(s, steps, m_reverse);
                float* rt = row(time) + r0 * ld;
                gemm('N', w_hh_op, m, g4, long(hs), rt + 4 * hs, ld, w_hh, ld_w_hh, 1.f, rt, ld);
                bool last = s + 1 == steps;
                float* next = last ? nullptr : row(step_time(s + 1, steps, m_reverse)) + r0 * ld;
                lstm_step_forward({rt, bias, y + (time * b + r0) * hs,
                                   last ? nullptr : next + 4 * hs,
                                   last ? cn + r0 * hs : next + 5 * hs, last ? hs : size_t(ld),
                                   size_t(m), hs});
            }
        });
        std::copy_n(y + step_time(steps - 1, steps, m_reverse) * b * hs, b * hs, hn);
    }

private:
    // W_hh^T's room after the staged inputs, from kTurnWHhSteps steps (one product a step).
    size_t w_hh_t_bytes() const {
        return m_z.t >= kTurnWHhSteps ? (4 * m_z.h * m_z.h * sizeof(float) + 63) / 64 * 64 : 0;
    }
    static constexpr size_t kTurnWHhSteps = 4;

    Sizes m_z;
    bool m_bias, m_reverse;
    Staging m_staging;
};

// tensors: x, w_ih, w_hh, reserve, dy, dhn, dcn, dx, dh0, dc0, dw_ih, dw_hh[, dbias]. The
// workspace holds the gates' gradients of every step, (T * B, 4H), a row of T * B ones for dbias's
// sum, then the staged inputs; dh0 and dc0 carry the state's gradients from step to step.
class BackwardPlan final : public Plan {
public:
    BackwardPlan(Sizes z, bool bias, bool reverse, Staging staging)
        : m_z(z), m_bias(bias), m_reverse(reverse), m_staging(std::move(staging)) {}
    size_t workspace_in_bytes() const override {
        return dg_bytes() + ones_bytes() + m_staging.bytes();
    }
    const char* name() const override { return "sgemm+hwy"; }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream&) override {
        const auto [steps, b, isz, hs] = m_z;
        const long g4 = long(4 * hs), ld = long(7 * hs), rows = long(steps * b);
        std::byte* stage = ws.ptr + dg_bytes() + ones_bytes();
        const float *x = m_staging.get(t, 0, stage), *w_ih = m_staging.get(t, 1, stage),
                    *w_hh = m_staging.get(t, 2, stage), *res = m_staging.get(t, 3, stage),
                    *dy = m_staging.get(t, 4, stage);
        float *dx = t[7].ptr<float>(), *dh = t[8].ptr<float>(), *dc = t[9].ptr<float>(),
              *dw_ih = t[10].ptr<float>(), *dw_hh = t[11].ptr<float>();
        auto* dg = reinterpret_cast<float*>(ws.ptr);
        std::copy_n(m_staging.get(t, 5, stage), b * hs, dh);
        std::copy_n(m_staging.get(t, 6, stage), b * hs, dc);
        // As in the forward, each thread runs the recurrence for its rows of the batch.
        parallel_ranges(b, steps * b * g4 * hs, kParallelGrain, [&](size_t r0, size_t r1) {
            const long m = long(r1 - r0);
            float *dh_r = dh + r0 * hs, *dc_r = dc + r0 * hs;
            for (size_t s = steps; s-- > 0;) {
                size_t time = step_time(s, steps, m_reverse);
                float* dgt = dg + (time * b + r0) * g4;
                lstm_step_backward({res + (time * b + r0) * ld, dy + (time * b + r0) * hs, dh_r,
                                    dc_r, dgt, size_t(m), hs});
                gemm('N', 'N', m, long(hs), g4, dgt, g4, w_hh, long(hs), 0.f, dh_r, long(hs));
            }
        });
        gemm('N', 'N', rows, long(isz), g4, dg, g4, w_ih, long(isz), 0.f, dx, long(isz));
        gemm('T', 'N', g4, long(isz), rows, dg, g4, x, long(isz), 0.f, dw_ih, long(isz));
        gemm('T', 'N', g4, long(hs), rows, dg, g4, res + 4 * hs, ld, 0.f, dw_hh, long(hs));
        if (m_bias) {
            // dbias = ones(1, T * B) dg: a column sum as one (threaded) product
            auto* ones = reinterpret_cast<float*>(ws.ptr + dg_bytes());
            std::fill_n(ones, rows, 1.f);
            gemm('N', 'N', 1, g4, rows, ones, rows, dg, g4, 0.f, t[12].ptr<float>(), g4);
        }
    }

private:
    size_t dg_bytes() const { return (m_z.t * m_z.b * 4 * m_z.h * sizeof(float) + 63) / 64 * 64; }
    size_t ones_bytes() const {
        return m_bias ? (m_z.t * m_z.b * sizeof(float) + 63) / 64 * 64 : 0;
    }

    Sizes m_z;
    bool m_bias, m_reverse;
    Staging m_staging;
};

class LSTMForwardImpl final : public DnnlKernel<LSTMForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (!takes(in, out))
            return nullptr;
        return std::make_unique<ForwardPlan>(Sizes{in[0][0], in[0][1], in[0][2], in[1][1]},
                                             m_param.bias, m_param.reverse, Staging(in));
    }
};

class LSTMBackwardImpl final : public DnnlKernel<LSTMBackward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (!takes(in, out))
            return nullptr;
        return std::make_unique<BackwardPlan>(Sizes{in[0][0], in[0][1], in[0][2], in[1][0] / 4},
                                              m_param.bias, m_param.reverse, Staging(in));
    }
};

}  // namespace
NM_REGISTER_X86(LSTMForward, LSTMForwardImpl);
NM_REGISTER_X86(LSTMBackward, LSTMBackwardImpl);
}  // namespace neomeg::dnn::x86
