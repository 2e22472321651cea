// PoolingForward and PoolingBackward through oneDNN's pooling, float32 and (where the CPU has a
// kernel: AVX-512) bfloat16, 1-D to 3-D (NCW, NCHW, NCDHW) in every mode: MAX (the first maximum of
// a window, padding never counts; its forward in our loops on float32 and bfloat16 and its
// backward checked for NaNs, max_pool_plan.h, since oneDNN's kernels skip them), AVERAGE
// (pooling_avg_include_padding) and AVERAGE_COUNT_EXCLUDE_PADDING (pooling_avg_exclude_padding).
// The operator's backward gets src, not the forward's indices, so MAX's backward through oneDNN
// reruns the forward for them; three cases run loops of our own instead. Float32 tensors whose
// channels are adjacent (channels-last, and the blocked ones eager mode passes as planes) with
// windows that tile the plane or are 3x3/2 pad 1 (max_pool_lanes_backward_hwy.h: each window's
// winner per lane, its gradient written where it belongs, naive's NaN rule; 1.2x and 1.0x oneDNN's
// forward plus backward on 32x64x56x56). Float32 planes with unit stride along W and 3x3/2 pad 1
// windows (max_pool_rows_backward_hwy.h: lanes are output columns; oneDNN's kernels on plain NCHW
// transpose to blocks and back, 0.4-0.6x its blocked forward plus backward, this loop 1.2x). And
// windows that tile contiguous NC[D]HW (stride ==
// window, no padding: the CNNs' 2x2), a loop that finds each window's first maximum and
// writes the gradient there, 2x2 windows in vectors (max_pool_backward_hwy.h: 0.5 ms for 8x64x56x56
// float32 on one thread, where the scalar loop took 4.6 and oneDNN's rerun-and-scatter more); on
// bfloat16 and float16 the 2x2 loop widens src in registers and copies dy's 16-bit bits (whole
// planes widened to float32 and narrowed back cost about 45 us of a LeNet bfloat16 step), other
// windows run the generic loop on each plane widened to float32 (exactly): a 16-bit gradient is
// dy's value either way. float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 run the
// float32 plans between vectorised conversions (lowp_plan.h); MAX pooling forward on QuantizedS8
// and Quantized8Asymm runs oneDNN's s8/u8 pooling (a maximum of the stored integers, exact); other
// dtypes and empty tensors go to naive. Average pooling over whole unpadded float32 planes
// (global average pooling) is a row mean of our Reduce (GlobalAveragePlan); AVERAGE_COUNT_EXCLUDE_
// PADDING without padding runs oneDNN's include-padding algorithm (the same windows and counts).
#include <algorithm>
#include <cmath>
#include <optional>

#include <vector>

#include "neomeg/dnn/operators/pooling.h"
#include "src/x86/kernel.h"
#include "src/x86/max_pool_backward_hwy.h"
#include "src/x86/max_pool_plan.h"
#include "src/x86/parallel.h"
#include "src/x86/reduce_hwy.h"
#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct Window {
    memory::dims kernel, stride, pad;
    algorithm alg = algorithm::pooling_max;
};

// oneDNN's type of a pooled tensor: the float dtypes, and the 8-bit quantized ones, whose maximum
// is that of the stored integers: s8 or u8, exact (window_of keeps their averages, which MegEngine
// rounds half away from zero where oneDNN rounds to even, on naive).
std::optional<memory::data_type> pool_type_of(DType dt) {
    if (dt.enumv() == DTypeEnum::QuantizedS8)
        return memory::data_type::s8;
    if (dt.enumv() == DTypeEnum::Quantized8Asymm)
        return memory::data_type::u8;
    return dnnl_type_of(dt);
}

// The window in oneDNN's terms, or nullopt where the kernel declines. Padding is symmetric; the
// shape rule floors, which oneDNN accepts with the same padding on the right.
std::optional<Window> window_of(const param::Pooling& p, std::span<const TensorLayout> layouts) {
    for (const TensorLayout& l : layouts)
        if (l.dtype != layouts[0].dtype || !pool_type_of(l.dtype) || l.is_empty() || l.ndim < 3 ||
            l.ndim > 5 || (l.dtype.is_quantized() && p.mode != param::Pooling::Mode::MAX))
            return std::nullopt;
    size_t spatial = layouts[0].ndim - 2;
    if (p.window.size() != spatial || p.stride.size() != spatial || p.padding.size() != spatial)
        return std::nullopt;
    Window w;
    for (size_t d = 0; d < spatial; ++d) {
        w.kernel.push_back(p.window[d]);
        w.stride.push_back(p.stride[d]);
        w.pad.push_back(p.padding[d]);
    }
    switch (p.mode) {
        case param::Pooling::Mode::MAX:
            w.alg = algorithm::pooling_max;
            break;
        case param::Pooling::Mode::AVERAGE:
            w.alg = algorithm::pooling_avg_include_padding;
            break;
        case param::Pooling::Mode::AVERAGE_COUNT_EXCLUDE_PADDING:
            // Without padding every window counts all its elements, as including the padding
            // does; oneDNN 2.6's exclude-padding kernel on plain NCHW took twice as long (2x2
            // windows of 32x64x28x28 on AVX2: 1.17 ms, the include-padding one 0.58).
            w.alg = std::all_of(w.pad.begin(), w.pad.end(), [](auto v) { return v == 0; })
                            ? algorithm::pooling_avg_include_padding
                            : algorithm::pooling_avg_exclude_padding;
            break;
    }
    return w;
}

std::optional<memory::desc> strided_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l), *pool_type_of(l.dtype));
}

Operand operand(const TensorLayout& l, bool stage) {
    return Operand::of(l, stage, strided_desc);
}

// oneDNN 2.6's pooling on plain NC[D]HW below AVX-512 is `simple_nchw` (scalar loops: 3x3/2
// average pooling of 32x64x56x56 took 68 ms on one AVX2 core, PyTorch 18) or `ref`; its JIT
// kernels read the blocked and channels-last layouts. A plan whose primitive is one of those tries
// these layouts next, the first with a JIT kernel winning: the operands are reordered into it and
// the output back, which costs less than the scalar loop (docs/x86-backend-log.md, "The silent
// slow paths on AVX2: an audit"). The primitive
// descriptor's implementation decides, so a CPU whose oneDNN has a JIT kernel for plain tensors
// keeps it.
struct Attempt {
    bool stage;
    std::optional<memory::format_tag> tag;  // the primitive's layout; nullopt: the tensor's own
};

std::vector<Attempt> attempts(size_t ndim) {
    using Tag = memory::format_tag;
    std::vector<Attempt> a{{false, std::nullopt}, {true, std::nullopt}};
    const Tag blocked[3][3] = {{Tag::nCw16c, Tag::nCw8c, Tag::nwc},
                               {Tag::nChw16c, Tag::nChw8c, Tag::nhwc},
                               {Tag::nCdhw16c, Tag::nCdhw8c, Tag::ndhwc}};
    for (Tag t : blocked[ndim - 3])
        a.push_back({false, t});
    return a;
}

bool is_slow_pooling(std::string_view impl) {
    return is_reference_impl(impl) || impl.starts_with("simple");
}

// The primitive's view of an operand: the tensor's own layout, or `tag` (then reordered).
memory::desc prim_desc(const Operand& op, const TensorLayout& l,
                       std::optional<memory::format_tag> tag) {
    if (!tag)
        return op.user_desc();
    return memory::desc(dims_of(l), *pool_type_of(l.dtype), *tag);
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::pooling_forward::primitive_desc forward_pd(const HandleImpl& handle, const Window& w,
                                                 prop_kind kind, const memory::desc& src,
                                                 const memory::desc& dst) {
    dnnl::pooling_forward::desc desc(kind, w.alg, src, dst, w.stride, w.kernel, w.pad, w.pad);
    return {desc, user_scratchpad(), handle.engine()};
}

// Average pooling whose one window is the whole unpadded plane (global average pooling, the
// adaptive pooling to 1x1) on contiguous float32: each plane is one row of reduce_f32's MEAN
// (float lanes, then double; reduce_hwy.h), where oneDNN's pooling took 2.4x PyTorch's time.
class GlobalAveragePlan final : public Plan {
public:
    GlobalAveragePlan(size_t planes, size_t plane) : m_planes(planes), m_plane(plane) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:global_average"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const auto* src = static_cast<const float*>(t[0].raw_ptr());
        auto* dst = static_cast<float*>(t[1].raw_ptr());
        parallel_ranges(m_planes, m_planes * m_plane, kParallelGrain, [&](size_t b, size_t e) {
            reduce_f32(param::Reduce::Mode::MEAN, src, dst, b, e, m_plane, 1);
        });
    }

private:
    size_t m_planes, m_plane;
};

std::unique_ptr<Plan> global_average_plan(const param::Pooling& p, const TensorLayout& src,
                                          const TensorLayout& dst) {
    if (p.mode == param::Pooling::Mode::MAX || src.dtype != dtype::Float32 ||
        dst.dtype != dtype::Float32 || !src.is_contiguous() || !dst.is_contiguous())
        return nullptr;
    size_t plane = 1;
    for (size_t d = 0; d + 2 < src.ndim; ++d) {
        if (p.padding[d] != 0 || size_t(p.window[d]) != src[d + 2] || dst[d + 2] != 1)
            return nullptr;
        plane *= src[d + 2];
    }
    return std::make_unique<GlobalAveragePlan>(src[0] * src[1], plane);
}

class PoolingForwardImpl final : public DnnlKernel<PoolingForward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        auto w = window_of(m_param, std::array{in[0], out[0]});
        if (!w)
            return nullptr;
        // MAX on float32 and bfloat16 in our loops, which keep naive's NaN rule.
        if (auto ours = max_pool_forward_plan(m_param, in[0], out[0]))
            return ours;
        if (auto ours = global_average_plan(m_param, in[0], out[0]))
            return ours;
        // Strided operands as they are first; staged dense where that gets only the reference
        // implementation; reordered into a blocked layout where the plain one has no JIT kernel.
        std::unique_ptr<Plan> fallback;
        for (const Attempt& a : attempts(in[0].ndim)) {
            Operand src = operand(in[0], a.stage), dst = operand(out[0], a.stage);
            auto pd = forward_pd(x86_handle(), *w, prop_kind::forward_inference,
                                 prim_desc(src, in[0], a.tag), prim_desc(dst, out[0], a.tag));
            std::string_view impl = pd.impl_info_str();
            if (!a.tag && !a.stage && is_reference_impl(impl))
                continue;
            if (fallback && is_slow_pooling(impl))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(dnnl::pooling_forward(pd), pd,
                                                        x86_handle().engine(), impl);
            plan->add(DNNL_ARG_SRC, std::move(src), pd.src_desc(), false);
            plan->add(DNNL_ARG_DST, std::move(dst), pd.dst_desc(), true);
            plan->finalize();
            if (!is_slow_pooling(impl))
                return plan;
            if (!fallback)
                fallback = std::move(plan);
        }
        return fallback;
    }
};

// MAX pooling's backward where the windows tile each plane without overlap or padding, on
// contiguous float32, bfloat16 or float16 NC[D]HW: per window, the first maximum (a NaN counts as
// the maximum, as in naive) gets the window's gradient, every other element 0 (so do the rows and
// columns past the last whole window).
class TiledMaxBackwardPlan final : public Plan {
public:
    // `plane`: src's spatial dims; `window`: per spatial dim, equal to the stride.
    TiledMaxBackwardPlan(DType dtype, size_t planes, std::vector<size_t> plane,
                         std::vector<size_t> window, std::vector<size_t> out)
        : m_dtype(dtype),
          m_planes(planes),
          m_plane(std::move(plane)),
          m_window(std::move(window)),
          m_out(std::move(out)) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:tiled_max_backward"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const auto* src = static_cast<const std::byte*>(t[0].raw_ptr());
        const auto* diff = static_cast<const std::byte*>(t[2].raw_ptr());
        auto* grad = static_cast<std::byte*>(t[3].raw_ptr());
        // Spatial dims as (depth, height, width), missing leading ones of size 1.
        size_t d[3] = {1, 1, 1}, k[3] = {1, 1, 1}, o[3] = {1, 1, 1};
        size_t off = 3 - m_plane.size();
        for (size_t i = 0; i < m_plane.size(); ++i) {
            d[off + i] = m_plane[i];
            k[off + i] = m_window[i];
            o[off + i] = m_out[i];
        }
        const size_t in_plane = d[0] * d[1] * d[2], out_plane = o[0] * o[1] * o[2];
        auto generic = [&](const float* s, const float* dy, float* g) {
            std::fill_n(g, in_plane, 0.f);
            for (size_t z = 0; z < o[0]; ++z)
                for (size_t y = 0; y < o[1]; ++y)
                    for (size_t x = 0; x < o[2]; ++x) {
                        size_t at = ((z * k[0]) * d[1] + y * k[1]) * d[2] + x * k[2];
                        float best = s[at];
                        for (size_t i = 0; i < k[0]; ++i)
                            for (size_t j = 0; j < k[1]; ++j)
                                for (size_t l = 0; l < k[2]; ++l) {
                                    size_t idx = ((z * k[0] + i) * d[1] + y * k[1] + j) * d[2] +
                                                 x * k[2] + l;
                                    float v = s[idx];
                                    if (!std::isnan(best) && (std::isnan(v) || v > best)) {
                                        best = v;
                                        at = idx;
                                    }
                                }
                        g[at] = dy[(z * o[1] + y) * o[2] + x];
                    }
        };
        // 2x2 windows (the common case) in vectors, each depth slice a plane of its own.
        auto two_by_two = [&](const float* s, const float* dy, float* g) {
            for (size_t z = 0; z < d[0]; ++z)
                max2x2_backward_plane(s + z * d[1] * d[2], dy + z * o[1] * o[2],
                                      g + z * d[1] * d[2], d[1], d[2], o[1], o[2]);
        };
        const bool fast = k[0] == 1 && k[1] == 2 && k[2] == 2;
        auto plane_grad = [&](const float* s, const float* dy, float* g) {
            if (fast) {
                two_by_two(s, dy, g);
            } else {
                generic(s, dy, g);
            }
        };
        const size_t size = m_dtype.size();
        parallel_ranges(m_planes, m_planes * in_plane, kParallelGrain, [&](size_t b, size_t e) {
            if (m_dtype == dtype::Float32) {
                for (size_t p = b; p < e; ++p)
                    plane_grad(reinterpret_cast<const float*>(src) + p * in_plane,
                               reinterpret_cast<const float*>(diff) + p * out_plane,
                               reinterpret_cast<float*>(grad) + p * in_plane);
                return;
            }
            if (fast) {
                // 2x2 windows widen in registers, each depth slice a plane of its own.
                const auto* s16 = reinterpret_cast<const uint16_t*>(src);
                const auto* dy16 = reinterpret_cast<const uint16_t*>(diff);
                auto* g16 = reinterpret_cast<uint16_t*>(grad);
                const bool bf16 = m_dtype == dtype::BFloat16;
                for (size_t p = b * d[0]; p < e * d[0]; ++p)
                    max2x2_backward_plane16(bf16, s16 + p * d[1] * d[2], dy16 + p * o[1] * o[2],
                                            g16 + p * d[1] * d[2], d[1], d[2], o[1], o[2]);
                return;
            }
            // Other windows: a 16-bit plane widened into buffers that stay in cache, its gradient
            // narrowed back.
            std::vector<float> s(in_plane), dy(out_plane), g(in_plane);
            for (size_t p = b; p < e; ++p) {
                type_cvt_run(m_dtype, dtype::Float32, src + p * in_plane * size, s.data(),
                             in_plane);
                type_cvt_run(m_dtype, dtype::Float32, diff + p * out_plane * size, dy.data(),
                             out_plane);
                plane_grad(s.data(), dy.data(), g.data());
                type_cvt_run(dtype::Float32, m_dtype, g.data(), grad + p * in_plane * size,
                             in_plane);
            }
        });
    }

private:
    DType m_dtype;
    size_t m_planes;
    std::vector<size_t> m_plane, m_window, m_out;
};

std::unique_ptr<Plan> tiled_max_backward(const param::Pooling& p, std::span<const TensorLayout> in,
                                         std::span<const TensorLayout> out) {
    const TensorLayout &src = in[0], &diff = in[2], &grad = out[0];
    const DType dt = src.dtype;
    if (p.mode != param::Pooling::Mode::MAX ||
        (dt != dtype::Float32 && dt != dtype::BFloat16 && dt != dtype::Float16) ||
        diff.dtype != dt || grad.dtype != dt || !src.is_contiguous() || !diff.is_contiguous() ||
        !grad.is_contiguous() || src.is_empty() || src.ndim < 3 || src.ndim > 5 ||
        !grad.eq_shape(src) || diff.ndim != src.ndim)
        return nullptr;
    size_t spatial = src.ndim - 2;
    if (p.window.size() != spatial || p.stride.size() != spatial || p.padding.size() != spatial)
        return nullptr;
    std::vector<size_t> plane, window, outs;
    for (size_t i = 0; i < spatial; ++i) {
        if (p.padding[i] != 0 || p.window[i] <= 0 || p.stride[i] != p.window[i])
            return nullptr;
        plane.push_back(src[2 + i]);
        window.push_back(static_cast<size_t>(p.window[i]));
        outs.push_back(diff[2 + i]);
        if (outs.back() * window.back() > plane.back())
            return nullptr;
    }
    if (diff[0] != src[0] || diff[1] != src[1])
        return nullptr;
    return std::make_unique<TiledMaxBackwardPlan>(dt, src[0] * src[1], std::move(plane),
                                                  std::move(window), std::move(outs));
}

// Inputs src, dst (unread: MAX recomputes its maxima from src), diff; output grad.
class PoolingBackwardImpl final : public DnnlKernel<PoolingBackward> {
public:
    using DnnlKernel::DnnlKernel;

private:
    // float16 (oneDNN 2.6 has no CPU kernel) and bfloat16 below AVX-512 compute in float32.
    bool lowp_in_float32() const override { return true; }

    std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        auto w = window_of(m_param, std::array{in[0], in[2], out[0]});
        if (!w)
            return nullptr;
        if (auto tiled = tiled_max_backward(m_param, in, out))
            return tiled;
        if (auto ours = max_pool_backward_plan(m_param, in[0], in[2], out[0]))
            return ours;
        const dnnl::engine& engine = x86_handle().engine();
        std::unique_ptr<Plan> fallback;
        for (const Attempt& a : attempts(in[0].ndim)) {
            Operand src = operand(in[0], a.stage), diff = operand(in[2], a.stage),
                    grad = operand(out[0], a.stage);
            // The forward that MAX reruns, and the hint the backward descriptor needs; its dst
            // is a dense buffer of diff's shape.
            memory::desc dense_dst(dims_of(in[2]), *dnnl_type_of(in[2].dtype),
                                   memory::format_tag::any);
            dnnl::pooling_forward::primitive_desc fwd;
            dnnl::pooling_backward::primitive_desc pd;
            try {
                fwd = forward_pd(x86_handle(), *w, prop_kind::forward_training,
                                 prim_desc(src, in[0], a.tag), dense_dst);
                dnnl::pooling_backward::desc desc(w->alg, prim_desc(grad, out[0], a.tag),
                                                  prim_desc(diff, in[2], a.tag), w->stride,
                                                  w->kernel, w->pad, w->pad);
                pd = {desc, user_scratchpad(), engine, fwd};
            } catch (const dnnl::error&) {
                // No implementation takes these strides (MAX's backward with a strided src):
                // staged dense, they run.
                if (a.stage && !a.tag && !fallback)
                    throw;
                continue;
            }
            std::string_view impl = pd.impl_info_str();
            if (!a.tag && !a.stage && is_reference_impl(impl))
                continue;
            if (fallback && is_slow_pooling(impl))
                continue;
            auto plan = std::make_unique<PrimitivePlan>(engine, impl);
            size_t indices = 0;
            if (w->alg == algorithm::pooling_max) {
                plan->add_step(dnnl::pooling_forward(fwd), fwd);
                plan->add(DNNL_ARG_SRC, std::move(src), fwd.src_desc(), false);
                plan->add_buffer(DNNL_ARG_DST, fwd.dst_desc());
                indices = plan->add_buffer(DNNL_ARG_WORKSPACE, fwd.workspace_desc());
            } else {
                plan->skip_tensor();
            }
            plan->add_step(dnnl::pooling_backward(pd), pd);
            plan->skip_tensor();
            plan->add(DNNL_ARG_DIFF_DST, std::move(diff), pd.diff_dst_desc(), false);
            plan->add(DNNL_ARG_DIFF_SRC, std::move(grad), pd.diff_src_desc(), true);
            if (w->alg == algorithm::pooling_max)
                plan->use(DNNL_ARG_WORKSPACE, indices);
            plan->finalize();
            // oneDNN's maxima skip NaNs: a window holding one takes naive's rule.
            auto checked =
                    nan_checked_max_backward(std::move(plan), m_param, in[0], in[1], in[2], out[0]);
            if (!is_slow_pooling(impl))
                return checked;
            if (!fallback)
                fallback = std::move(checked);
        }
        return fallback;
    }
};

}  // namespace
NM_REGISTER_X86(PoolingForward, PoolingForwardImpl);
NM_REGISTER_X86(PoolingBackward, PoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
