// BatchNormForwardBlocked and BatchNormBackwardBlocked, and their relu and residual add + relu
// fusions (the same sweeps add the residual and apply the relu, or sum the two gradients and
// apply the mask), on contiguous float32 tensors in ChannelBlock's layout with a block
// of 8 or 16: loops of our own over (N, Cb, S, block), the innermost axis a vector of `block`
// channels, so every pass is one sweep over memory with the per-channel values in registers
// (forward: the moments, then the affine map; backward: the two sums, then the gradient). Channel
// blocks are split over threads. Sums run in float along one row (N, cb) and in double across
// rows; the moments are taken about the first row's mean, so the variance does not come from
// cancelling large sums. The running statistics and saved inverse std follow BatchNormForward's
// x86 kernel (batch_norm.cpp). Other cases go to naive.
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/norm.h"
#include "src/common/channel_blocked.h"
#include "src/x86/batch_norm_running.h"
#include "src/x86/kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

#define NM_BN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// A per-channel tensor ({C} or {1, C, 1, ...}) as C strided floats.
struct Channels {
    float* p;
    ptrdiff_t stride;
    float& operator[](size_t c) const { return p[static_cast<ptrdiff_t>(c) * stride]; }
};

Channels channel_values(const TensorND& t) {
    const TensorLayout& l = t.layout;
    return {static_cast<float*>(t.raw_ptr()), l.stride[l.ndim == 1 ? 0 : 1]};
}

// The loops over one row (N, cb) of S positions x `B` channels, with B fixed so that the inner
// loop is one vector; the NM_BN_CLONES wrappers below pick B (8 or 16) inside each ISA's clone.
#define NM_BN_INLINE inline __attribute__((always_inline))

// The sums and the backward loops are written on 8-float vectors (GCC's vector extension: one AVX2
// register, half an AVX-512 one, two SSE ones in the default clone; a block of 16 is two) rather
// than left to the auto-vectoriser: as plain loops over a position's B channels, with the relu's
// mask as a select and the fused backward's store beside its sums, GCC ran the backward a scalar
// at a time with a branch per element (on AVX2 the ResNet-18 step's BatchNorm backward took 6-7x
// its forward), and the moments' sweep took 1.6x the eager kernel's. Each lane does the scalar
// loop's float operations in its order, so the results are the same.
using V8 = float __attribute__((vector_size(32), aligned(4), may_alias));

NM_BN_INLINE const V8& v8(const float* p) {
    return *reinterpret_cast<const V8*>(p);
}
NM_BN_INLINE V8& v8(float* p) {
    return *reinterpret_cast<V8*>(p);
}

// Adds a vector accumulator's lanes to 8 double sums.
NM_BN_INLINE void add_lanes(double* acc, const V8& v) {
    for (size_t i = 0; i < 8; ++i)
        acc[i] += v[i];
}

// acc1[i] += sum (x - shift[i]), acc2[i] += sum (x - shift[i])^2.
template <size_t B>
NM_BN_INLINE void moments_t(const float* x, size_t s_count, const float* shift, double* acc1,
                            double* acc2) {
    constexpr size_t K = B / 8;
    V8 p1[K] = {}, p2[K] = {}, sh[K];
    for (size_t k = 0; k < K; ++k)
        sh[k] = v8(shift + 8 * k);
    for (size_t s = 0; s < s_count; ++s)
        for (size_t k = 0; k < K; ++k) {
            const V8 d = v8(x + s * B + 8 * k) - sh[k];
            p1[k] += d;
            p2[k] += d * d;
        }
    for (size_t k = 0; k < K; ++k) {
        add_lanes(acc1 + 8 * k, p1[k]);
        add_lanes(acc2 + 8 * k, p2[k]);
    }
}

// SWITCH_GT0(mask, dy) on the vector at j, with kMask; dy itself without (mask is then null, so
// it is indexed only here). Through `out`: a vector returned by value is an ABI question in the
// default clone, which GCC warns of.
template <bool kMask>
NM_BN_INLINE void masked(const float* dy, const float* mask, size_t j, V8& out) {
    if constexpr (kMask)
        out = v8(mask + j) > V8{} ? v8(dy + j) : V8{};
    else
        out = v8(dy + j);
}

// acc_dy[i] += sum dy, acc_dyx[i] += sum dy * (x - mean[i]), dy masked by `mask` with kMask.
template <size_t B, bool kMask>
NM_BN_INLINE void grad_sums_t(const float* dy, const float* mask, const float* x, size_t s_count,
                              const float* mean, double* acc_dy, double* acc_dyx) {
    constexpr size_t K = B / 8;
    V8 pdy[K] = {}, pdyx[K] = {}, mu[K];
    for (size_t k = 0; k < K; ++k)
        mu[k] = v8(mean + 8 * k);
    for (size_t s = 0; s < s_count; ++s)
        for (size_t k = 0; k < K; ++k) {
            const size_t j = s * B + 8 * k;
            V8 d;
            masked<kMask>(dy, mask, j, d);
            pdy[k] += d;
            pdyx[k] += d * (v8(x + j) - mu[k]);
        }
    for (size_t k = 0; k < K; ++k) {
        add_lanes(acc_dy + 8 * k, pdy[k]);
        add_lanes(acc_dyx + 8 * k, pdyx[k]);
    }
}

// y = a * x + b, plus z with kAdd, relu'd with kRelu (the fused forwards): the unfused ops'
// float roundings, one per op.
template <size_t B, bool kRelu, bool kAdd>
NM_BN_INLINE void affine_t(const float* x, const float* z, float* y, size_t s_count, const float* a,
                           const float* b) {
    for (size_t s = 0; s < s_count; ++s)
        for (size_t i = 0; i < B; ++i) {
            float v = a[i] * x[s * B + i] + b[i];
            if constexpr (kAdd)
                v += z[s * B + i];
            y[s * B + i] = kRelu ? (v > 0 ? v : 0.f) : v;
        }
}

// d = SWITCH_GT0(mask, dy + da), written out, and its sums as grad_sums_t's (the residual fusion's
// backward).
template <size_t B>
NM_BN_INLINE void masked_sum_grad_sums_t(const float* dy, const float* da, const float* mask,
                                         float* d, const float* x, size_t s_count,
                                         const float* mean, double* acc_dy, double* acc_dyx) {
    constexpr size_t K = B / 8;
    V8 pdy[K] = {}, pdyx[K] = {}, mu[K];
    for (size_t k = 0; k < K; ++k)
        mu[k] = v8(mean + 8 * k);
    for (size_t s = 0; s < s_count; ++s)
        for (size_t k = 0; k < K; ++k) {
            const size_t j = s * B + 8 * k;
            const V8 sum = v8(dy + j) + v8(da + j);
            const V8 v = v8(mask + j) > V8{} ? sum : V8{};
            v8(d + j) = v;
            pdy[k] += v;
            pdyx[k] += v * (v8(x + j) - mu[k]);
        }
    for (size_t k = 0; k < K; ++k) {
        add_lanes(acc_dy + 8 * k, pdy[k]);
        add_lanes(acc_dyx + 8 * k, pdyx[k]);
    }
}

// y = a * dy + c * x + b, dy masked by `mask` with kMask (the backward).
template <size_t B, bool kMask>
NM_BN_INLINE void grad_affine_t(const float* dy, const float* mask, const float* x, float* y,
                                size_t s_count, const float* a, const float* b, const float* c) {
    constexpr size_t K = B / 8;
    V8 va[K], vb[K], vc[K];
    for (size_t k = 0; k < K; ++k) {
        va[k] = v8(a + 8 * k);
        vb[k] = v8(b + 8 * k);
        vc[k] = v8(c + 8 * k);
    }
    for (size_t s = 0; s < s_count; ++s)
        for (size_t k = 0; k < K; ++k) {
            const size_t j = s * B + 8 * k;
            V8 d;
            masked<kMask>(dy, mask, j, d);
            v8(y + j) = va[k] * d + vc[k] * v8(x + j) + vb[k];
        }
}

#undef NM_BN_INLINE

NM_BN_CLONES void row_moments(const float* x, size_t s_count, size_t block, const float* shift,
                              double* acc1, double* acc2) {
    if (block == 16)
        moments_t<16>(x, s_count, shift, acc1, acc2);
    else
        moments_t<8>(x, s_count, shift, acc1, acc2);
}

// Each variant its own instantiation: a mask or relu tested per element would not vectorise.
NM_BN_CLONES void row_grad_sums(const float* dy, const float* mask, const float* x, size_t s_count,
                                size_t block, const float* mean, double* acc_dy, double* acc_dyx) {
    if (block == 16 && mask)
        grad_sums_t<16, true>(dy, mask, x, s_count, mean, acc_dy, acc_dyx);
    else if (block == 16)
        grad_sums_t<16, false>(dy, mask, x, s_count, mean, acc_dy, acc_dyx);
    else if (mask)
        grad_sums_t<8, true>(dy, mask, x, s_count, mean, acc_dy, acc_dyx);
    else
        grad_sums_t<8, false>(dy, mask, x, s_count, mean, acc_dy, acc_dyx);
}

NM_BN_CLONES void row_masked_sum_grad_sums(const float* dy, const float* da, const float* mask,
                                           float* d, const float* x, size_t s_count, size_t block,
                                           const float* mean, double* acc_dy, double* acc_dyx) {
    if (block == 16)
        masked_sum_grad_sums_t<16>(dy, da, mask, d, x, s_count, mean, acc_dy, acc_dyx);
    else
        masked_sum_grad_sums_t<8>(dy, da, mask, d, x, s_count, mean, acc_dy, acc_dyx);
}

// z (not null) is added before the relu, which it implies.
NM_BN_CLONES void row_affine(const float* x, const float* z, float* y, size_t s_count, size_t block,
                             bool relu, const float* a, const float* b) {
    if (block == 16 && z)
        affine_t<16, true, true>(x, z, y, s_count, a, b);
    else if (block == 16 && relu)
        affine_t<16, true, false>(x, z, y, s_count, a, b);
    else if (block == 16)
        affine_t<16, false, false>(x, z, y, s_count, a, b);
    else if (z)
        affine_t<8, true, true>(x, z, y, s_count, a, b);
    else if (relu)
        affine_t<8, true, false>(x, z, y, s_count, a, b);
    else
        affine_t<8, false, false>(x, z, y, s_count, a, b);
}

NM_BN_CLONES void row_grad_affine(const float* dy, const float* mask, const float* x, float* y,
                                  size_t s_count, size_t block, const float* a, const float* b,
                                  const float* c) {
    if (block == 16 && mask)
        grad_affine_t<16, true>(dy, mask, x, y, s_count, a, b, c);
    else if (block == 16)
        grad_affine_t<16, false>(dy, mask, x, y, s_count, a, b, c);
    else if (mask)
        grad_affine_t<8, true>(dy, mask, x, y, s_count, a, b, c);
    else
        grad_affine_t<8, false>(dy, mask, x, y, s_count, a, b, c);
}

#undef NM_BN_CLONES

// (N, Cb, S, block) of a blocked tensor.
struct Geometry {
    size_t n, cb, s, block;
    size_t row() const { return s * block; }
    const float* at(const TensorND& t, size_t i, size_t b) const {
        return static_cast<const float*>(t.raw_ptr()) + (i * cb + b) * row();
    }
    float* at_mut(const TensorND& t, size_t i, size_t b) const {
        return static_cast<float*>(t.raw_ptr()) + (i * cb + b) * row();
    }
};

Geometry geometry(const TensorLayout& blocked) {
    Geometry g{blocked[0], blocked[1], 1, blocked[blocked.ndim - 1]};
    for (size_t d = 2; d + 1 < blocked.ndim; ++d)
        g.s *= blocked[d];
    return g;
}

bool takes(std::span<const TensorLayout> in, std::span<const TensorLayout> out, size_t n_blocked_in,
           size_t n_blocked_out) {
    for (auto ls : {in, out})
        for (const TensorLayout& l : ls)
            if (l.dtype != dtype::Float32 || l.is_empty())
                return false;
    const size_t block = in[0][in[0].ndim - 1];
    if (block != 8 && block != 16)
        return false;
    for (size_t i = 0; i < n_blocked_in; ++i)
        if (!in[i].is_contiguous())
            return false;
    for (size_t i = 0; i < n_blocked_out; ++i)
        if (!out[i].is_contiguous())
            return false;
    return true;
}

// What a plan fuses into BatchNorm: nothing, a relu (BatchNormRelu*Blocked), or a residual add and
// a relu (BatchNormAddRelu*Blocked).
enum class Fusion { None, Relu, AddRelu };

class ForwardPlan final : public Plan {
public:
    ForwardPlan(param::BatchNorm p, Fusion fusion) : m_param(p), m_fusion(fusion) {}
    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "blocked"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const Geometry g = geometry(t[0].layout);
        const size_t channels = bn_channels(t[1].layout);
        const size_t m = g.n * g.s;
        const bool training = m_param.fwd_mode == param::BatchNorm::FwdMode::TRAINING;
        const double momentum = m_param.momentum, eps = m_param.epsilon;
        Channels scale = channel_values(t[1]), bias = channel_values(t[2]);
        Channels rm_in = channel_values(t[3]), rv_in = channel_values(t[4]);
        // AddRelu has z as input 5, the others their outputs from there.
        const bool add = m_fusion == Fusion::AddRelu;
        const size_t out0 = add ? 6 : 5;
        const TensorND& dst = t[out0];
        Channels mean_out = channel_values(t[out0 + 1]), inv_out = channel_values(t[out0 + 2]);
        Channels rm_out = channel_values(t[out0 + 3]), rv_out = channel_values(t[out0 + 4]);
        // Read before writing: the running outputs may alias the running inputs.
        std::vector<float> sc(channels), bi(channels), rm(channels), rv(channels);
        for (size_t c = 0; c < channels; ++c) {
            sc[c] = scale[c];
            bi[c] = bias[c];
            rm[c] = rm_in[c];
            rv[c] = rv_in[c];
        }
        std::vector<double> mean(channels), var(channels);
        parallel_ranges(g.cb, g.n * g.cb * g.row() * 3, kParallelGrain, [&](size_t b0, size_t b1) {
            for (size_t b = b0; b < b1; ++b) {
                const size_t c0 = b * g.block, live = std::min(g.block, channels - c0);
                float shift[16] = {}, a[16] = {}, off[16] = {};
                double acc[16] = {}, acc2[16] = {};
                if (training) {
                    // Moments about a shift near the mean (the first row's mean), in one pass:
                    // the sums of deviations stay small, so float rows lose little.
                    double first[16] = {}, unused[16] = {};
                    row_moments(g.at(t[0], 0, b), g.s, g.block, shift, first, unused);
                    for (size_t k = 0; k < live; ++k)
                        shift[k] = static_cast<float>(first[k] / double(g.s));
                    for (size_t i = 0; i < g.n; ++i)
                        row_moments(g.at(t[0], i, b), g.s, g.block, shift, acc, acc2);
                    for (size_t k = 0; k < live; ++k) {
                        const double d = acc[k] / double(m);
                        mean[c0 + k] = double(shift[k]) + d;
                        var[c0 + k] = std::max(acc2[k] / double(m) - d * d, 0.0);
                    }
                } else {
                    for (size_t k = 0; k < live; ++k) {
                        mean[c0 + k] = rm[c0 + k];
                        var[c0 + k] = rv[c0 + k];
                    }
                }
                for (size_t k = 0; k < live; ++k) {
                    double inv = 1.0 / std::sqrt(var[c0 + k] + eps);
                    a[k] = static_cast<float>(inv * sc[c0 + k]);
                    off[k] = static_cast<float>(bi[c0 + k] - mean[c0 + k] * inv * sc[c0 + k]);
                }
                // The channels past C get a = off = 0: zero, as the layout requires.
                for (size_t i = 0; i < g.n; ++i)
                    row_affine(g.at(t[0], i, b), add ? g.at(t[5], i, b) : nullptr,
                               g.at_mut(dst, i, b), g.s, g.block, m_fusion != Fusion::None, a, off);
            }
        });
        for (size_t c = 0; c < channels; ++c) {
            double r_mean = rm[c], r_var = rv[c];
            if (training)
                bn_update_running(r_mean, r_var, mean[c], var[c], m, momentum);
            mean_out[c] = static_cast<float>(mean[c]);
            inv_out[c] = static_cast<float>(1.0 / std::sqrt(var[c] + eps));
            rm_out[c] = static_cast<float>(r_mean);
            rv_out[c] = static_cast<float>(r_var);
        }
    }

private:
    param::BatchNorm m_param;
    Fusion m_fusion;
};

// Relu: BatchNormReluBackwardBlocked, whose relu_dst (input 5) masks diff. AddRelu:
// BatchNormAddReluBackwardBlocked (diff, diff_add, then BatchNormBackwardBlocked's inputs from src
// on, relu_dst; its masked sum an output after dbias), whose first sweep writes the masked sum
// and the second reads it as diff.
class BackwardPlan final : public Plan {
public:
    BackwardPlan(param::BatchNorm p, Fusion fusion) : m_param(p), m_fusion(fusion) {}
    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "blocked"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const bool add = m_fusion == Fusion::AddRelu, masked = m_fusion == Fusion::Relu;
        // The inputs from src on and the outputs, after diff (and diff_add).
        const size_t in0 = add ? 2 : 1, out0 = add ? 7 : masked ? 6 : 5;
        const TensorND &x = t[in0], &grad = t[out0];
        // AddRelu's second sweep reads the masked sum its first wrote.
        const TensorND& dy = add ? t[out0 + 3] : t[0];
        const Geometry g = geometry(x.layout);
        const size_t channels = bn_channels(t[in0 + 1].layout);
        const double m = double(g.n * g.s);
        const bool training = m_param.fwd_mode == param::BatchNorm::FwdMode::TRAINING;
        Channels scale = channel_values(t[in0 + 1]), saved_mean = channel_values(t[in0 + 2]),
                 saved_inv = channel_values(t[in0 + 3]);
        std::vector<float> sc(channels), mu(channels), inv(channels);
        for (size_t c = 0; c < channels; ++c) {
            sc[c] = scale[c];
            mu[c] = saved_mean[c];
            inv[c] = saved_inv[c];
        }
        std::vector<double> dscale(channels), dbias(channels);
        parallel_ranges(g.cb, g.n * g.cb * g.row() * 3, kParallelGrain, [&](size_t b0, size_t b1) {
            for (size_t b = b0; b < b1; ++b) {
                const size_t c0 = b * g.block, live = std::min(g.block, channels - c0);
                float mean[16] = {}, a[16] = {}, bx[16] = {}, off[16] = {};
                double sdy[16] = {}, sdyx[16] = {};
                for (size_t k = 0; k < live; ++k)
                    mean[k] = mu[c0 + k];
                auto mask = [&](size_t i) { return masked ? g.at(t[5], i, b) : nullptr; };
                for (size_t i = 0; i < g.n; ++i)
                    if (add)
                        row_masked_sum_grad_sums(g.at(t[0], i, b), g.at(t[1], i, b),
                                                 g.at(t[6], i, b), g.at_mut(dy, i, b),
                                                 g.at(x, i, b), g.s, g.block, mean, sdy, sdyx);
                    else
                        row_grad_sums(g.at(dy, i, b), mask(i), g.at(x, i, b), g.s, g.block, mean,
                                      sdy, sdyx);
                for (size_t k = 0; k < live; ++k) {
                    const size_t c = c0 + k;
                    const double iv = inv[c], s = sc[c];
                    dbias[c] = sdy[k];
                    dscale[c] = sdyx[k] * iv;
                    // grad = s * iv * (dy - (dbias + xhat * dscale) / m) in training, with
                    // xhat = (x - mean) * iv: a * dy + bx * x + off.
                    a[k] = static_cast<float>(s * iv);
                    if (training) {
                        double k2 = -s * iv * iv * dscale[c] / m;
                        bx[k] = static_cast<float>(k2);
                        off[k] = static_cast<float>(-s * iv * dbias[c] / m - k2 * mean[k]);
                    }
                }
                for (size_t i = 0; i < g.n; ++i)
                    row_grad_affine(g.at(dy, i, b), mask(i), g.at(x, i, b), g.at_mut(grad, i, b),
                                    g.s, g.block, a, off, bx);
            }
        });
        Channels dscale_out = channel_values(t[out0 + 1]), dbias_out = channel_values(t[out0 + 2]);
        for (size_t c = 0; c < channels; ++c) {
            dscale_out[c] = static_cast<float>(dscale[c]);
            dbias_out[c] = static_cast<float>(dbias[c]);
        }
    }

private:
    param::BatchNorm m_param;
    Fusion m_fusion;
};

template <class Op, Fusion kFusion>
class ForwardImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (!takes(in, out, 1, 1) || (kFusion == Fusion::AddRelu && !in[5].is_contiguous()))
            return nullptr;
        return std::make_unique<ForwardPlan>(this->m_param, kFusion);
    }
};

template <class Op, Fusion kFusion>
class BackwardImpl final : public DnnlKernel<Op> {
public:
    using DnnlKernel<Op>::DnnlKernel;

private:
    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (kFusion == Fusion::AddRelu) {
            // diff, diff_add, src, relu_dst and grad, masked_diff dense.
            if (!takes(in, out, 3, 1) || !in[6].is_contiguous() || !out[3].is_contiguous())
                return nullptr;
        } else if (!takes(in, out, 2, 1) || (kFusion == Fusion::Relu && !in[5].is_contiguous())) {
            return nullptr;
        }
        return std::make_unique<BackwardPlan>(this->m_param, kFusion);
    }
};

using BnForward = ForwardImpl<BatchNormForwardBlocked, Fusion::None>;
using BnBackward = BackwardImpl<BatchNormBackwardBlocked, Fusion::None>;
using BnReluForward = ForwardImpl<BatchNormReluForwardBlocked, Fusion::Relu>;
using BnReluBackward = BackwardImpl<BatchNormReluBackwardBlocked, Fusion::Relu>;
using BnAddReluForward = ForwardImpl<BatchNormAddReluForwardBlocked, Fusion::AddRelu>;
using BnAddReluBackward = BackwardImpl<BatchNormAddReluBackwardBlocked, Fusion::AddRelu>;

}  // namespace
NM_REGISTER_X86(BatchNormForwardBlocked, BnForward);
NM_REGISTER_X86(BatchNormBackwardBlocked, BnBackward);
NM_REGISTER_X86(BatchNormReluForwardBlocked, BnReluForward);
NM_REGISTER_X86(BatchNormReluBackwardBlocked, BnReluBackward);
NM_REGISTER_X86(BatchNormAddReluForwardBlocked, BnAddReluForward);
NM_REGISTER_X86(BatchNormAddReluBackwardBlocked, BnAddReluBackward);
}  // namespace neomeg::dnn::x86
