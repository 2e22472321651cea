// BatchNormForward and BatchNormBackward, float32, 2-D to 5-D src with channels on axis 1.
// Contiguous tensors run our own Highway loops (batch_norm_hwy.cpp: in double, in naive's order,
// channels split over threads): oneDNN 2.6 has only its plain C++ implementation for NCHW
// (ncsp_bnorm), about twice as slow. Strided tensors run oneDNN's batch normalisation. oneDNN works
// with the batch variance, the operator with the inverse standard deviation and MegEngine's running
// statistics; the per-channel conversions (inverse std, running updates with the unbiased variance,
// the variance back from a saved inverse std) are a loop over C around the primitive. Contiguous
// float16 and bfloat16 data (with float32 statistics and parameters, as autocast gives) run the
// same Highway loops, which widen it exactly and round results as naive rounds; strided (a
// channels-last autocast activation) they run oneDNN's primitive where it has a 16-bit kernel
// (bfloat16 from AVX-512 on, computing in float32), else (float16 in 2.6, bfloat16 on AVX2) the
// float32 plan between conversions (lowp_plan.h: a channels-last tensor stays channels-last, so
// oneDNN's float32 nhwc kernel runs), never a reference kernel. Other dtypes and empty tensors go
// to naive.
#include <cmath>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/all_contiguous.h"
#include "src/x86/batch_norm_hwy.h"
#include "src/x86/batch_norm_running.h"
#include "src/x86/kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

// A per-channel tensor ({C} or {1, C, 1, ...}) as C strided floats.
struct Channels {
    float* p;
    ptrdiff_t stride;
    float& operator[](size_t c) const { return p[static_cast<ptrdiff_t>(c) * stride]; }
};

Channels channels(const TensorND& t) {
    const TensorLayout& l = t.layout;
    return {static_cast<float*>(t.raw_ptr()), l.stride[l.ndim == 1 ? 0 : 1]};
}

std::optional<memory::desc> channel_desc(const TensorLayout& l) {
    size_t axis = l.ndim == 1 ? 0 : 1;
    return plain_desc({static_cast<memory::dim>(l[axis])}, {l.stride[axis]});
}

std::optional<memory::desc> strided_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l), *dnnl_type_of(l.dtype));
}

bool is_lowp_float(DType dt) {
    return dt == dtype::Float16 || dt == dtype::BFloat16;
}

// The first `n_data` inputs and dst are the data, float32 or one 16-bit float dtype; statistics
// and parameters float32.
bool takes(std::span<const TensorLayout> in, std::span<const TensorLayout> out, size_t n_data) {
    DType dt = in[0].dtype;
    if (dt != dtype::Float32 && !is_lowp_float(dt))
        return false;
    for (size_t i = 0; i < in.size(); ++i)
        if (in[i].dtype != (i < n_data ? dt : DType(dtype::Float32)) || in[i].is_empty())
            return false;
    for (size_t i = 0; i < out.size(); ++i)
        if (out[i].dtype != (i == 0 ? dt : DType(dtype::Float32)) || out[i].is_empty())
            return false;
    return in[0].ndim >= 2 && in[0].ndim <= 5;
}

BnData bn_data(DType dt) {
    return dt == dtype::BFloat16 ? BnData::BF16 : dt == dtype::Float16 ? BnData::F16 : BnData::F32;
}

// The address of t's element `i` (in memory order).
void* element(const TensorND& t, size_t i) {
    return static_cast<char*>(t.raw_ptr()) + i * t.layout.dtype.size();
}

// float16 or bfloat16 data (the first `n_data` inputs and dst, all contiguous, of one dtype) with
// float32 statistics and parameters: the Highway plans read and write it directly.
bool takes_lowp(std::span<const TensorLayout> in, std::span<const TensorLayout> out,
                size_t n_data) {
    DType dt = in[0].dtype;
    if (!is_lowp_float(dt) || in[0].ndim < 2 || in[0].ndim > 5)
        return false;
    auto ok = [&](const TensorLayout& l, bool data) {
        return !l.is_empty() && l.dtype == (data ? dt : DType(dtype::Float32)) &&
               (!data || l.is_contiguous());
    };
    for (size_t i = 0; i < in.size(); ++i)
        if (!ok(in[i], i < n_data))
            return false;
    for (size_t i = 0; i < out.size(); ++i)
        if (!ok(out[i], i == 0))
            return false;
    return true;
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

size_t per_channel_count(const TensorLayout& src) {
    return src.total_nr_elems() / src[1];
}

// Runs the primitive, then derives the operator's statistics outputs.
class ForwardPlan final : public Plan {
public:
    ForwardPlan(std::unique_ptr<PrimitivePlan> prim, param::BatchNorm p, size_t m, size_t mean_off,
                size_t var_off)
        : m_prim(std::move(prim)), m_param(p), m_m(m), m_mean_off(mean_off), m_var_off(var_off) {}
    size_t workspace_in_bytes() const override { return m_prim->workspace_in_bytes(); }
    const char* name() const override { return m_prim->name(); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        m_prim->run(t, ws, stream);
        bool training = m_param.fwd_mode == param::BatchNorm::FwdMode::TRAINING;
        Channels rm_in = channels(t[3]), rv_in = channels(t[4]);
        Channels mean_out = channels(t[6]), inv_out = channels(t[7]);
        Channels rm_out = channels(t[8]), rv_out = channels(t[9]);
        const auto* bmean = reinterpret_cast<const float*>(ws.ptr + m_mean_off);
        const auto* bvar = reinterpret_cast<const float*>(ws.ptr + m_var_off);
        double momentum = m_param.momentum, eps = m_param.epsilon;
        for (size_t c = 0, n = t[0].layout[1]; c < n; ++c) {
            // Read before writing: the running outputs may alias the running inputs.
            double rm = rm_in[c], rv = rv_in[c];
            double mean = rm, var = rv;
            if (training) {
                mean = bmean[c];
                var = bvar[c];
                bn_update_running(rm, rv, mean, var, m_m, momentum);
            }
            mean_out[c] = static_cast<float>(mean);
            inv_out[c] = static_cast<float>(1.0 / std::sqrt(var + eps));
            rm_out[c] = static_cast<float>(rm);
            rv_out[c] = static_cast<float>(rv);
        }
    }

private:
    std::unique_ptr<PrimitivePlan> m_prim;
    param::BatchNorm m_param;
    size_t m_m, m_mean_off, m_var_off;
};

// Recovers the variance the primitive wants from the saved inverse std, then runs it. oneDNN 2.6's
// backward rejects its arguments at execution with separate scale and shift (use_scale |
// use_shift), so it runs with the packed form: scale is copied into the first row of a (2, C)
// buffer and the (2, C) gradient is unpacked into dscale and dbias.
class BackwardPlan final : public Plan {
public:
    struct Buffers {
        size_t var, scale_shift, diff_scale_shift;
    };
    BackwardPlan(std::unique_ptr<PrimitivePlan> prim, float eps, Buffers b)
        : m_prim(std::move(prim)), m_eps(eps), m_buf(b) {}
    size_t workspace_in_bytes() const override { return m_prim->workspace_in_bytes(); }
    const char* name() const override { return m_prim->name(); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        size_t n = t[1].layout[1];
        Channels scale = channels(t[2]), inv = channels(t[4]);
        auto* var = reinterpret_cast<float*>(ws.ptr + m_buf.var);
        auto* ss = reinterpret_cast<float*>(ws.ptr + m_buf.scale_shift);
        for (size_t c = 0; c < n; ++c) {
            double i = inv[c];
            var[c] = static_cast<float>(1.0 / (i * i) - double(m_eps));
            ss[c] = scale[c];
            ss[n + c] = 0;
        }
        m_prim->run(t, ws, stream);
        const auto* dss = reinterpret_cast<const float*>(ws.ptr + m_buf.diff_scale_shift);
        Channels dscale = channels(t[6]), dbias = channels(t[7]);
        for (size_t c = 0; c < n; ++c) {
            dscale[c] = dss[c];
            dbias[c] = dss[n + c];
        }
    }

private:
    std::unique_ptr<PrimitivePlan> m_prim;
    float m_eps;
    Buffers m_buf;
};

// Work (elements) below which a kernel stays on one thread.
ChannelRows channel_rows(const TensorLayout& src) {
    size_t c = src[1], s = src.total_nr_elems() / (src[0] * c);
    return {src[0], c * s, s};
}

class HwyForwardPlan final : public Plan {
public:
    explicit HwyForwardPlan(param::BatchNorm p) : m_param(p) {}
    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "hwy"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        BnData kind = bn_data(t[0].layout.dtype);
        ChannelRows r = channel_rows(t[0].layout);
        size_t m = r.rows * r.len;
        Channels scale = channels(t[1]), bias = channels(t[2]), rm_in = channels(t[3]),
                 rv_in = channels(t[4]), mean_out = channels(t[6]), inv_out = channels(t[7]),
                 rm_out = channels(t[8]), rv_out = channels(t[9]);
        bool training = m_param.fwd_mode == param::BatchNorm::FwdMode::TRAINING;
        double momentum = m_param.momentum, eps = m_param.epsilon;
        size_t nc = t[0].layout[1];
        parallel_ranges(nc, m * nc, kParallelGrain, [&](size_t cb, size_t ce) {
            for (size_t c = cb; c < ce; ++c) {
                const void* src = element(t[0], c * r.len);
                // Read before writing: the running outputs may alias the running inputs.
                double rm = rm_in[c], rv = rv_in[c];
                double mean = rm, var = rv;
                if (training) {
                    bn_moments(kind, src, r, &mean, &var);
                    bn_update_running(rm, rv, mean, var, m, momentum);
                }
                double inv_std = 1.0 / std::sqrt(var + eps);
                bn_normalize(kind, src, element(t[5], c * r.len), r, mean, inv_std, scale[c],
                             bias[c]);
                mean_out[c] = static_cast<float>(mean);
                inv_out[c] = static_cast<float>(inv_std);
                rm_out[c] = static_cast<float>(rm);
                rv_out[c] = static_cast<float>(rv);
            }
        });
    }

private:
    param::BatchNorm m_param;
};

class HwyBackwardPlan final : public Plan {
public:
    explicit HwyBackwardPlan(param::BatchNorm p) : m_param(p) {}
    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "hwy"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        BnData kind = bn_data(t[1].layout.dtype);
        ChannelRows r = channel_rows(t[1].layout);
        Channels scale = channels(t[2]), mean = channels(t[3]), inv = channels(t[4]),
                 dscale_out = channels(t[6]), dbias_out = channels(t[7]);
        bool training = m_param.fwd_mode == param::BatchNorm::FwdMode::TRAINING;
        size_t nc = t[1].layout[1];
        parallel_ranges(nc, r.rows * r.len * nc, kParallelGrain, [&](size_t cb, size_t ce) {
            for (size_t c = cb; c < ce; ++c) {
                const void* dy = element(t[0], c * r.len);
                const void* src = element(t[1], c * r.len);
                double dbias = 0, dscale = 0;
                bn_grad_sums(kind, dy, src, r, mean[c], inv[c], &dbias, &dscale);
                bn_grad(kind, dy, src, element(t[5], c * r.len), r, mean[c], inv[c], scale[c],
                        dbias, dscale, training);
                dscale_out[c] = static_cast<float>(dscale);
                dbias_out[c] = static_cast<float>(dbias);
            }
        });
    }

private:
    param::BatchNorm m_param;
};

normalization_flags flags_of(const param::BatchNorm& p, bool packed) {
    normalization_flags f =
            packed ? normalization_flags::use_scale_shift
                   : normalization_flags::use_scale | normalization_flags::use_shift;
    if (p.fwd_mode == param::BatchNorm::FwdMode::INFERENCE)
        f |= normalization_flags::use_global_stats;
    return f;
}

dnnl::batch_normalization_forward::primitive_desc forward_pd(const dnnl::engine& engine,
                                                             const param::BatchNorm& p,
                                                             prop_kind kind,
                                                             const memory::desc& src, bool packed) {
    dnnl::batch_normalization_forward::desc desc(kind, src, p.epsilon, flags_of(p, packed));
    return {desc, user_scratchpad(), engine};
}

// Inputs src, scale, bias, running_mean, running_var; outputs dst, batch_mean, batch_inv_std,
// running_mean_out, running_var_out.
class BatchNormForwardImpl final : public DnnlKernel<BatchNormForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    bool lowp_in_float32() const override { return true; }
    bool lowp_float32_operands() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (takes_lowp(in, out, 1))
            return std::make_unique<HwyForwardPlan>(m_param);
        if (!takes(in, out, 1))
            return nullptr;
        if (all_contiguous(std::array{in[0], out[0]}))
            return std::make_unique<HwyForwardPlan>(m_param);
        const dnnl::engine& engine = x86_handle().engine();
        bool training = m_param.fwd_mode == Param::FwdMode::TRAINING;
        for (bool stage : {false, true}) {
            Operand src = Operand::of(in[0], stage, strided_desc);
            auto pd = forward_pd(
                    engine, m_param,
                    training ? prop_kind::forward_training : prop_kind::forward_inference,
                    src.user_desc(), false);
            std::string_view impl = pd.impl_info_str();
            // A 16-bit reference kernel loses to the float32 plan between conversions.
            if (is_reference_impl(impl) && (!stage || is_lowp_float(in[0].dtype)))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(dnnl::batch_normalization_forward(pd), pd,
                                                        engine, impl);
            plan->add(DNNL_ARG_SRC, std::move(src), pd.src_desc(), false);
            plan->add(DNNL_ARG_SCALE, Operand::of(in[1], false, channel_desc), pd.weights_desc(),
                      false);
            plan->add(DNNL_ARG_SHIFT, Operand::of(in[2], false, channel_desc), pd.weights_desc(),
                      false);
            size_t mean_off = 0, var_off = 0;
            if (training) {
                plan->skip_tensor();
                plan->skip_tensor();
                mean_off = plan->add_buffer(DNNL_ARG_MEAN, pd.mean_desc());
                var_off = plan->add_buffer(DNNL_ARG_VARIANCE, pd.variance_desc());
            } else {
                plan->add(DNNL_ARG_MEAN, Operand::of(in[3], false, channel_desc), pd.mean_desc(),
                          false);
                plan->add(DNNL_ARG_VARIANCE, Operand::of(in[4], false, channel_desc),
                          pd.variance_desc(), false);
            }
            plan->add(DNNL_ARG_DST, Operand::of(out[0], stage, strided_desc), pd.dst_desc(), true);
            plan->finalize();
            return std::make_unique<ForwardPlan>(std::move(plan), m_param, per_channel_count(in[0]),
                                                 mean_off, var_off);
        }
        return nullptr;
    }
};

// Inputs diff, src, scale, saved_mean, saved_inv_std; outputs grad, dscale, dbias.
class BatchNormBackwardImpl final : public DnnlKernel<BatchNormBackward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    bool lowp_in_float32() const override { return true; }
    bool lowp_float32_operands() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (takes_lowp(in, out, 2))
            return std::make_unique<HwyBackwardPlan>(m_param);
        if (!takes(in, out, 2))
            return nullptr;
        if (all_contiguous(std::array{in[0], in[1], out[0]}))
            return std::make_unique<HwyBackwardPlan>(m_param);
        const dnnl::engine& engine = x86_handle().engine();
        for (bool stage : {false, true}) {
            Operand diff = Operand::of(in[0], stage, strided_desc);
            Operand src = Operand::of(in[1], stage, strided_desc);
            Operand grad = Operand::of(out[0], stage, strided_desc);
            auto hint =
                    forward_pd(engine, m_param, prop_kind::forward_training, src.user_desc(), true);
            dnnl::batch_normalization_backward::desc desc(prop_kind::backward, grad.user_desc(),
                                                          src.user_desc(), m_param.epsilon,
                                                          flags_of(m_param, true));
            dnnl::batch_normalization_backward::primitive_desc pd(desc, user_scratchpad(), engine,
                                                                  hint);
            std::string_view impl = pd.impl_info_str();
            // A 16-bit reference kernel loses to the float32 plan between conversions.
            if (is_reference_impl(impl) && (!stage || is_lowp_float(in[0].dtype)))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(dnnl::batch_normalization_backward(pd), pd,
                                                        engine, impl);
            plan->add(DNNL_ARG_DIFF_DST, std::move(diff), pd.diff_dst_desc(), false);
            plan->add(DNNL_ARG_SRC, std::move(src), pd.src_desc(), false);
            plan->skip_tensor();
            plan->add(DNNL_ARG_MEAN, Operand::of(in[3], false, channel_desc), pd.mean_desc(),
                      false);
            plan->skip_tensor();
            BackwardPlan::Buffers b;
            b.var = plan->add_buffer(DNNL_ARG_VARIANCE, pd.variance_desc());
            b.scale_shift = plan->add_buffer(DNNL_ARG_SCALE_SHIFT, pd.weights_desc());
            b.diff_scale_shift =
                    plan->add_buffer(DNNL_ARG_DIFF_SCALE_SHIFT, pd.diff_weights_desc());
            plan->add(DNNL_ARG_DIFF_SRC, std::move(grad), pd.diff_src_desc(), true);
            plan->finalize();
            return std::make_unique<BackwardPlan>(std::move(plan), m_param.epsilon, b);
        }
        return nullptr;
    }
};

}  // namespace
NM_REGISTER_X86(BatchNormForward, BatchNormForwardImpl);
NM_REGISTER_X86(BatchNormBackward, BatchNormBackwardImpl);
}  // namespace neomeg::dnn::x86
