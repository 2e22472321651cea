// FakeQuant, TQT, LSQ and their gradients on x86: the operands (inputs broadcast to src's shape,
// then the outputs) walked as rows along which each is dense or one broadcast value, the rows
// computed by fake_quant_hwy.h's vector loops, split across OpenMP threads when large. A
// per-channel scale over NCHW makes rows of H x W. TQT's step 2^scale is taken once per row
// (scalar powf, as naive) where scale is broadcast along it. Every element follows the scalar
// formulas' rounding, so results are naive's bits. float32 only (naive converts other dtypes
// per element); rows where an operand is strided run the scalar formulas.
#include <algorithm>
#include <array>
#include <cmath>

#include "neomeg/dnn/operators/quantization.h"
#include "src/common/fake_quant_math.h"
#include "src/x86/fake_quant_hwy.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

namespace fq = fake_quant;
constexpr size_t kMaxFq = 7;  // LSQBackward: five inputs, two outputs

// The operands merged into the fewest axes: an axis joins the one after it where every operand
// steps across both as one (broadcast operands: stride 0 in both); size-1 axes are dropped.
struct Walk {
    size_t ndim = 0, count = 0;
    std::array<size_t, TensorLayout::MAX_NDIM> shape{};
    std::array<std::array<ptrdiff_t, TensorLayout::MAX_NDIM>, kMaxFq> stride{};
};

Walk walk_of(std::span<const TensorLayout> ls) {
    Walk w;
    const TensorLayout& ref = ls[0];
    for (size_t d = 0; d < ref.ndim; ++d) {
        if (ref[d] == 1)
            continue;
        bool merge = w.ndim > 0;
        for (size_t k = 0; k < ls.size() && merge; ++k)
            merge = w.stride[k][w.ndim - 1] == ls[k].stride[d] * static_cast<ptrdiff_t>(ref[d]);
        if (merge) {
            w.shape[w.ndim - 1] *= ref[d];
            for (size_t k = 0; k < ls.size(); ++k)
                w.stride[k][w.ndim - 1] = ls[k].stride[d];
            continue;
        }
        w.shape[w.ndim] = ref[d];
        for (size_t k = 0; k < ls.size(); ++k)
            w.stride[k][w.ndim] = ls[k].stride[d];
        ++w.ndim;
    }
    if (w.ndim == 0) {  // one element
        w.shape[0] = 1;
        w.ndim = 1;
    }
    w.count = ls.size();
    return w;
}

// Rows are cut into blocks of at most this many elements, so that one long row splits across
// threads too.
constexpr size_t kBlock = 4096;

template <class Op>
class FakeQuantKernel : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

protected:
    // The kind and which input is src (the walk's shape), which the step t replaces (TQT), and
    // how many of the inputs are read.
    virtual FqKind kind() const = 0;
    virtual size_t src_index() const = 0;
    virtual std::ptrdiff_t step_index() const { return -1; }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        bool f32 = true;
        for (auto ts : {inputs, outputs})
            for (const TensorND& t : ts)
                f32 = f32 && t.layout.dtype == dtype::Float32;
        if (!f32 || inputs.size() + outputs.size() > kMaxFq) {
            this->run_naive(inputs, outputs, ws);
            return;
        }
        this->m_last = "loop";
        const TensorShape& shape = inputs[src_index()].layout;
        if (shape.is_empty())
            return;
        std::array<TensorLayout, kMaxFq> ls;
        std::array<const float*, kMaxFq> base{};
        size_t n_in = inputs.size(), n = n_in + outputs.size();
        for (size_t k = 0; k < n_in; ++k) {
            ls[k] = inputs[k].layout.broadcast(shape);
            base[k] = static_cast<const float*>(inputs[k].raw_ptr());
        }
        for (size_t j = 0; j < outputs.size(); ++j) {
            ls[n_in + j] = outputs[j].layout;
            base[n_in + j] = static_cast<const float*>(outputs[j].raw_ptr());
        }
        Walk w = walk_of(std::span<const TensorLayout>(ls.data(), n));
        const size_t inner = w.shape[w.ndim - 1], blocks = (inner + kBlock - 1) / kBlock;
        size_t rows = 1;
        for (size_t d = 0; d + 1 < w.ndim; ++d)
            rows *= w.shape[d];
        const auto qmin = static_cast<float>(this->m_param.qmin);
        const auto qmax = static_cast<float>(this->m_param.qmax);
        const FqKind k = kind();
        const ptrdiff_t step = step_index();
        bool vec = true;  // every operand dense or broadcast along the rows, the outputs dense
        for (size_t i = 0; i < n; ++i) {
            ptrdiff_t s = w.stride[i][w.ndim - 1];
            vec = vec && (s == 1 || (s == 0 && i < n_in) || inner == 1);
        }
        parallel_ranges(rows * blocks, rows * inner * 8, kParallelGrain, [&](size_t b, size_t e) {
            std::array<const float*, kMaxFq> p{};
            std::array<bool, kMaxFq> bcast{};
            std::array<float*, 2> out{};
            float t = 0;
            for (size_t u = b; u < e; ++u) {
                size_t row = u / blocks, c0 = (u % blocks) * kBlock;
                size_t len = std::min(kBlock, inner - c0);
                for (size_t i = 0; i < n; ++i) {
                    ptrdiff_t off = w.stride[i][w.ndim - 1] * static_cast<ptrdiff_t>(c0);
                    for (size_t d = w.ndim - 1, r = row; d-- > 0;) {
                        off += static_cast<ptrdiff_t>(r % w.shape[d]) * w.stride[i][d];
                        r /= w.shape[d];
                    }
                    p[i] = base[i] + off;
                    bcast[i] = w.stride[i][w.ndim - 1] == 0 || len == 1;
                }
                for (size_t j = 0; j < outputs.size(); ++j)
                    out[j] = const_cast<float*>(p[n_in + j]);
                if (vec && (step < 0 || bcast[static_cast<size_t>(step)])) {
                    if (step >= 0) {
                        t = powf(2.f, p[static_cast<size_t>(step)][0]);
                        p[static_cast<size_t>(step)] = &t;
                    }
                    fake_quant_row(k, p.data(), bcast.data(), out.data(), len, qmin, qmax);
                    continue;
                }
                scalar_run(p, out, len, n, fq::Range{qmin, qmax}, w);
            }
        });
    }

private:
    // The scalar formulas along a run whose operands step by their own strides.
    void scalar_run(const std::array<const float*, kMaxFq>& p, const std::array<float*, 2>& out,
                    size_t len, size_t n, fq::Range r, const Walk& w) const {
        const size_t n_in = n - (kind() == FqKind::TQTGrad || kind() == FqKind::LSQGrad ? 2 : 1);
        std::array<ptrdiff_t, kMaxFq> s{};
        for (size_t i = 0; i < n; ++i)
            s[i] = w.stride[i][w.ndim - 1];
        for (size_t e = 0; e < len; ++e) {
            float v[5];
            for (size_t i = 0; i < n_in; ++i)
                v[i] = p[i][static_cast<ptrdiff_t>(e) * s[i]];
            float* o0 = out[0] + static_cast<ptrdiff_t>(e) * s[n_in];
            switch (kind()) {
                case FqKind::FakeQuant:
                    *o0 = fq::fake_quant(v[0], v[1], v[2], r);
                    break;
                case FqKind::FakeQuantGrad:
                    *o0 = fq::fake_quant_grad(v[0], v[1], v[2], v[3], r);
                    break;
                case FqKind::TQT:
                    *o0 = fq::tqt(v[0], v[1], r);
                    break;
                case FqKind::LSQ:
                    *o0 = fq::lsq(v[0], v[1], v[2], r);
                    break;
                case FqKind::TQTGrad:
                case FqKind::LSQGrad: {
                    fq::Grads g = kind() == FqKind::TQTGrad
                                          ? fq::tqt_grad(v[0], v[1], v[2], r)
                                          : fq::lsq_grad(v[0], v[1], v[2], v[3], v[4], r);
                    *o0 = g.src;
                    out[1][static_cast<ptrdiff_t>(e) * s[n_in + 1]] = g.scale;
                    break;
                }
            }
        }
    }
};

#define NM_FQ_KERNEL(Op, Kind, Src, Step)                           \
    class Op##Impl final : public FakeQuantKernel<Op> {             \
    public:                                                         \
        using FakeQuantKernel::FakeQuantKernel;                     \
                                                                    \
    protected:                                                      \
        FqKind kind() const override { return FqKind::Kind; }       \
        size_t src_index() const override { return Src; }           \
        std::ptrdiff_t step_index() const override { return Step; } \
    };

NM_FQ_KERNEL(FakeQuant, FakeQuant, 0, -1)
NM_FQ_KERNEL(FakeQuantBackward, FakeQuantGrad, 1, -1)
NM_FQ_KERNEL(TQT, TQT, 0, 1)
NM_FQ_KERNEL(TQTBackward, TQTGrad, 1, 2)
NM_FQ_KERNEL(LSQ, LSQ, 0, -1)
NM_FQ_KERNEL(LSQBackward, LSQGrad, 1, -1)
#undef NM_FQ_KERNEL

}  // namespace
NM_REGISTER_X86(FakeQuant, FakeQuantImpl);
NM_REGISTER_X86(FakeQuantBackward, FakeQuantBackwardImpl);
NM_REGISTER_X86(TQT, TQTImpl);
NM_REGISTER_X86(TQTBackward, TQTBackwardImpl);
NM_REGISTER_X86(LSQ, LSQImpl);
NM_REGISTER_X86(LSQBackward, LSQBackwardImpl);
}  // namespace neomeg::dnn::x86
