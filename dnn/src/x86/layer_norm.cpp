// LayerNormForward and LayerNormBackward, float32. The trailing normalized_dim axes of src form a
// row. Contiguous tensors run our own loops (layer_norm_hwy.h) over rows split across threads:
// oneDNN 2.6's primitives took 0.9x PyTorch's time for a BERT-mini step's 2048 rows of 256, its
// backward a pass for dweight/dbias of its own. The backward's dweight and dbias are sums over the
// rows in blocks whose bounds depend on the shape alone, added in block order, so they do not
// change with the number of threads.
//
// Strided tensors run oneDNN's layer normalisation: the primitive sees src as (rows, row length)
// through a dense staging copy, and the statistics as (rows). oneDNN works with the variance, the
// operator with the inverse standard deviation: the forward derives rstd from the variance it
// leaves in the workspace, the backward recovers the variance from rstd (the primitive adds eps
// back, so only var + eps matters and nothing is lost). oneDNN 2.6's backward fails at execution
// with separate scale and shift, so it runs with the packed (2, row length) form: weight is copied
// into its first row and the gradient unpacked.
// float16 and bfloat16 data with float32 statistics run the float32 plans between conversions
// (lowp_plan.h); other dtypes and empty tensors go to naive.
#include <algorithm>
#include <cmath>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/all_contiguous.h"
#include "src/x86/kernel.h"
#include "src/x86/layer_norm_hwy.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

struct Rows {
    memory::dim rows = 1, len = 1;
};

Rows rows_of(const TensorLayout& src, uint32_t normalized_dim) {
    Rows r;
    for (size_t i = 0; i < src.ndim; ++i)
        (i + normalized_dim < src.ndim ? r.rows : r.len) *= static_cast<memory::dim>(src[i]);
    return r;
}

bool takes(std::span<const TensorLayout> in, std::span<const TensorLayout> out) {
    for (auto ls : {in, out})
        for (const TensorLayout& l : ls)
            if (l.dtype != dtype::Float32 || l.is_empty())
                return false;
    return true;
}

// A tensor of `dims` elements in row-major order (data as (rows, len), statistics as (rows), weight
// as (len)): contiguous ones as they are, the others staged.
Operand dense_operand(const TensorLayout& l, memory::dims dims) {
    return Operand::of(l, false, [dims](const TensorLayout& x) -> std::optional<memory::desc> {
        if (!x.is_contiguous())
            return std::nullopt;
        return memory::desc(dims, memory::data_type::f32,
                            dims.size() == 1 ? memory::format_tag::a : memory::format_tag::ab);
    });
}

// tensors: src[, weight, bias], dst, mean, rstd.
class HwyForwardPlan final : public Plan {
public:
    HwyForwardPlan(Rows r, bool affine, float eps) : m_rows(r), m_affine(affine), m_eps(eps) {}
    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "hwy"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const float* x = t[0].ptr<float>();
        const float* w = m_affine ? t[1].ptr<float>() : nullptr;
        const float* b = m_affine ? t[2].ptr<float>() : nullptr;
        size_t o = m_affine ? 3 : 1;
        float *y = t[o].ptr<float>(), *mean = t[o + 1].ptr<float>(), *rstd = t[o + 2].ptr<float>();
        auto rows = static_cast<size_t>(m_rows.rows), len = static_cast<size_t>(m_rows.len);
        parallel_ranges(rows, 2 * rows * len, kParallelGrain, [&](size_t rb, size_t re) {
            layer_norm_rows(x, w, b, y, mean, rstd, rb, re, len, m_eps);
        });
    }

private:
    Rows m_rows;
    bool m_affine;
    float m_eps;
};

// tensors: dy, src, mean, rstd[, weight], dx[, dweight, dbias]. The workspace holds each row
// block's partial dweight and dbias.
class HwyBackwardPlan final : public Plan {
public:
    HwyBackwardPlan(Rows r, bool affine) : m_affine(affine) {
        m_rows = static_cast<size_t>(r.rows);
        m_len = static_cast<size_t>(r.len);
        // At most 64 blocks, and partial sums of at most 2^18 floats: the block count bounds the
        // threads that share the rows, the partials the workspace and the final sum's reads.
        size_t blocks =
                std::min({m_rows, size_t(64), std::max<size_t>(1, (size_t(1) << 18) / m_len)});
        m_block_rows = (m_rows + blocks - 1) / blocks;
        m_blocks = (m_rows + m_block_rows - 1) / m_block_rows;
    }
    size_t workspace_in_bytes() const override {
        return m_affine ? m_blocks * 2 * m_len * sizeof(float) : 0;
    }
    const char* name() const override { return "hwy"; }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream&) override {
        const float *dy = t[0].ptr<float>(), *x = t[1].ptr<float>(), *mean = t[2].ptr<float>(),
                    *rstd = t[3].ptr<float>();
        const float* w = m_affine ? t[4].ptr<float>() : nullptr;
        float* dx = t[m_affine ? 5 : 4].ptr<float>();
        auto* part = reinterpret_cast<float*>(ws.ptr);
        size_t len = m_len, rows = m_rows, brows = m_block_rows;
        parallel_ranges(m_blocks, 3 * rows * len, kParallelGrain, [&](size_t kb, size_t ke) {
            for (size_t k = kb; k < ke; ++k) {
                float* acc = m_affine ? part + k * 2 * len : nullptr;
                if (acc)
                    std::fill_n(acc, 2 * len, 0.f);
                size_t end = std::min(rows, (k + 1) * brows);
                layer_norm_grad_rows(dy, x, mean, rstd, w, dx, acc, acc ? acc + len : nullptr,
                                     k * brows, end, len);
            }
        });
        if (!m_affine)
            return;
        float *dw = t[6].ptr<float>(), *db = t[7].ptr<float>();
        parallel_ranges(len, 2 * m_blocks * len, kParallelGrain, [&](size_t jb, size_t je) {
            std::copy(part + jb, part + je, dw + jb);
            std::copy(part + len + jb, part + len + je, db + jb);
            for (size_t k = 1; k < m_blocks; ++k) {
                const float* pk = part + k * 2 * len;
                for (size_t j = jb; j < je; ++j) {
                    dw[j] += pk[j];
                    db[j] += pk[len + j];
                }
            }
        });
    }

private:
    bool m_affine;
    size_t m_rows = 0, m_len = 0, m_block_rows = 1, m_blocks = 1;
};

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

memory::desc stat_desc(const Rows& r) {
    return memory::desc({r.rows}, memory::data_type::f32, memory::format_tag::a);
}

dnnl::layer_normalization_forward::primitive_desc forward_pd(const HandleImpl& handle,
                                                             const Rows& r, float eps,
                                                             normalization_flags flags) {
    memory::desc data({r.rows, r.len}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::layer_normalization_forward::desc desc(prop_kind::forward_training, data, stat_desc(r),
                                                 eps, flags);
    return {desc, user_scratchpad(), handle.engine()};
}

// Runs the primitive, then writes rstd from the variance it left in the workspace (turned into
// rstd in place, then copied into the possibly strided output).
class ForwardPlan final : public Plan {
public:
    ForwardPlan(std::unique_ptr<PrimitivePlan> prim, float eps, size_t rstd, size_t var_off)
        : m_prim(std::move(prim)), m_eps(eps), m_rstd(rstd), m_var_off(var_off) {}
    size_t workspace_in_bytes() const override { return m_prim->workspace_in_bytes(); }
    const char* name() const override { return m_prim->name(); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        m_prim->run(t, ws, stream);
        const TensorND& rstd = t[m_rstd];
        auto* v = reinterpret_cast<float*>(ws.ptr + m_var_off);
        for (size_t r = 0, n = rstd.layout.total_nr_elems(); r < n; ++r)
            v[r] = static_cast<float>(1.0 / std::sqrt(double(v[r]) + m_eps));
        copy_from_dense(v, rstd);
    }

private:
    std::unique_ptr<PrimitivePlan> m_prim;
    double m_eps;
    size_t m_rstd, m_var_off;  // rstd's index among the call's tensors
};

class LayerNormForwardImpl final : public DnnlKernel<LayerNormForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 and bfloat16 data (oneDNN 2.6 takes only float32 scale and shift) with float32
    // statistics compute in float32 between conversions.
    bool lowp_in_float32() const override { return true; }
    bool lowp_float32_operands() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (!takes(in, out))
            return nullptr;
        Rows r = rows_of(in[0], m_param.normalized_dim);
        if (all_contiguous(in, out))
            return std::make_unique<HwyForwardPlan>(r, m_param.affine, m_param.eps);
        auto flags = m_param.affine
                             ? normalization_flags::use_scale | normalization_flags::use_shift
                             : normalization_flags::none;
        auto pd = forward_pd(x86_handle(), r, m_param.eps, flags);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::layer_normalization_forward(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_SRC, dense_operand(in[0], {r.rows, r.len}), pd.src_desc(), false);
        if (m_param.affine) {
            memory::desc vec({r.len}, memory::data_type::f32, memory::format_tag::a);
            plan->add(DNNL_ARG_SCALE, dense_operand(in[1], {r.len}), vec, false);
            plan->add(DNNL_ARG_SHIFT, dense_operand(in[2], {r.len}), vec, false);
        }
        plan->add(DNNL_ARG_DST, dense_operand(out[0], {r.rows, r.len}), pd.dst_desc(), true);
        plan->add(DNNL_ARG_MEAN, dense_operand(out[1], {r.rows}), pd.mean_desc(), true);
        plan->skip_tensor();  // rstd, written from the variance
        size_t var = plan->add_buffer(DNNL_ARG_VARIANCE, pd.variance_desc());
        plan->finalize();
        return std::make_unique<ForwardPlan>(std::move(plan), m_param.eps, in.size() + 2, var);
    }
};

// Recovers the variance from rstd (and packs weight) before the primitive, unpacks dweight and
// dbias after it.
class BackwardPlan final : public Plan {
public:
    struct Buffers {
        size_t var, scale_shift, diff_scale_shift;
    };
    BackwardPlan(std::unique_ptr<PrimitivePlan> prim, float eps, bool affine, Buffers b)
        : m_prim(std::move(prim)), m_eps(eps), m_affine(affine), m_buf(b) {}
    size_t workspace_in_bytes() const override { return m_prim->workspace_in_bytes(); }
    const char* name() const override { return m_prim->name(); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        const TensorND& rstd = t[3];
        auto* var = reinterpret_cast<float*>(ws.ptr + m_buf.var);
        copy_to_dense(rstd, var);
        for (size_t r = 0, n = rstd.layout.total_nr_elems(); r < n; ++r)
            var[r] = static_cast<float>(1.0 / (double(var[r]) * var[r]) - m_eps);
        size_t len = 0;
        if (m_affine) {
            const TensorND& weight = t[4];
            len = weight.layout.total_nr_elems();
            auto* ss = reinterpret_cast<float*>(ws.ptr + m_buf.scale_shift);
            copy_to_dense(weight, ss);
            std::fill(ss + len, ss + 2 * len, 0.f);
        }
        m_prim->run(t, ws, stream);
        if (m_affine) {
            const auto* dss = reinterpret_cast<const float*>(ws.ptr + m_buf.diff_scale_shift);
            copy_from_dense(dss, t[6]);
            copy_from_dense(dss + len, t[7]);
        }
    }

private:
    std::unique_ptr<PrimitivePlan> m_prim;
    double m_eps;
    bool m_affine;
    Buffers m_buf;
};

class LayerNormBackwardImpl final : public DnnlKernel<LayerNormBackward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 and bfloat16 data (oneDNN 2.6 takes only float32 scale and shift) with float32
    // statistics compute in float32 between conversions.
    bool lowp_in_float32() const override { return true; }
    bool lowp_float32_operands() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        if (!takes(in, out))
            return nullptr;
        Rows r = rows_of(in[1], m_param.normalized_dim);
        bool affine = m_param.affine;
        if (all_contiguous(in, out))
            return std::make_unique<HwyBackwardPlan>(r, affine);
        auto flags = affine ? normalization_flags::use_scale_shift : normalization_flags::none;
        auto hint = forward_pd(x86_handle(), r, m_param.eps, flags);
        memory::desc data({r.rows, r.len}, memory::data_type::f32, memory::format_tag::ab);
        dnnl::layer_normalization_backward::desc desc(
                affine ? prop_kind::backward : prop_kind::backward_data, data, data, stat_desc(r),
                m_param.eps, flags);
        dnnl::layer_normalization_backward::primitive_desc pd(desc, user_scratchpad(),
                                                              x86_handle().engine(), hint);
        auto plan = std::make_unique<PrimitivePlan>(dnnl::layer_normalization_backward(pd), pd,
                                                    x86_handle().engine(), pd.impl_info_str());
        plan->add(DNNL_ARG_DIFF_DST, dense_operand(in[0], {r.rows, r.len}), pd.diff_dst_desc(),
                  false);
        plan->add(DNNL_ARG_SRC, dense_operand(in[1], {r.rows, r.len}), pd.src_desc(), false);
        plan->add(DNNL_ARG_MEAN, dense_operand(in[2], {r.rows}), pd.mean_desc(), false);
        plan->skip_tensor();  // rstd, read as the variance
        BackwardPlan::Buffers b{};
        b.var = plan->add_buffer(DNNL_ARG_VARIANCE, pd.variance_desc());
        if (affine) {
            plan->skip_tensor();  // weight, packed
            b.scale_shift = plan->add_buffer(DNNL_ARG_SCALE_SHIFT, pd.weights_desc());
            b.diff_scale_shift =
                    plan->add_buffer(DNNL_ARG_DIFF_SCALE_SHIFT, pd.diff_weights_desc());
        }
        plan->add(DNNL_ARG_DIFF_SRC, dense_operand(out[0], {r.rows, r.len}), pd.diff_src_desc(),
                  true);
        plan->finalize();
        return std::make_unique<BackwardPlan>(std::move(plan), m_param.eps, affine, b);
    }
};

}  // namespace
NM_REGISTER_X86(LayerNormForward, LayerNormForwardImpl);
NM_REGISTER_X86(LayerNormBackward, LayerNormBackwardImpl);
}  // namespace neomeg::dnn::x86
