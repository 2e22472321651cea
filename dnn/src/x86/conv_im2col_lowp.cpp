#include "src/x86/conv_im2col_lowp.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "neomeg/dnn/channels_last.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

using Bits = uint16_t;  // a bfloat16 moved, not computed with

// Whether `l` (4-D) has the strides of a dense NHWC tensor, size-1 axes aside (an (N, C, 1, 1)
// output is its own channels-last layout).
bool nhwc_dense(const TensorLayout& l) {
    const size_t c = l[1], h = l[2], w = l[3];
    const size_t want[4] = {h * w * c, 1, w * c, c};
    for (size_t d = 0; d < 4; ++d)
        if (l[d] > 1 && l.stride[d] != static_cast<ptrdiff_t>(want[d]))
            return false;
    return true;
}

// The sizes of one case: N images of IC x IH x IW into OC x OH x OW, a KH x KW filter.
struct Geometry {
    int64_t n, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw;

    Geometry(const ConvDims& g, const TensorLayout& src, const TensorLayout& filter,
             const TensorLayout& dst)
        : n(int64_t(src[0])),
          ic(int64_t(src[1])),
          ih(int64_t(src[2])),
          iw(int64_t(src[3])),
          oc(int64_t(dst[1])),
          oh(int64_t(dst[2])),
          ow(int64_t(dst[3])),
          kh(int64_t(filter[2])),
          kw(int64_t(filter[3])),
          sh(g.stride[0]),
          sw(g.stride[1]),
          ph(g.pad[0]),
          pw(g.pad[1]) {}

    int64_t rows() const { return n * oh * ow; }   // of the im2col matrix
    int64_t taps() const { return kh * kw * ic; }  // its columns, in (kh, kw, ic) order
};

// col[(n, oh, ow)][(kh, kw, ic)] = src[n, oh*sh - ph + kh, ow*sw - pw + kw, ic], zero outside.
void im2col(const Geometry& k, const Bits* src, Bits* col) {
    const size_t run = size_t(k.ic) * sizeof(Bits);
    parallel_ranges(size_t(k.rows()), size_t(k.rows() * k.taps()), kParallelGrain,
                    [&](size_t begin, size_t end) {
                        for (size_t r = begin; r < end; ++r) {
                            const int64_t x = int64_t(r) % k.ow, y = int64_t(r) / k.ow % k.oh,
                                          n = int64_t(r) / (k.ow * k.oh);
                            Bits* out = col + int64_t(r) * k.taps();
                            for (int64_t i = 0; i < k.kh; ++i) {
                                const int64_t row = y * k.sh - k.ph + i;
                                for (int64_t j = 0; j < k.kw; ++j, out += k.ic) {
                                    const int64_t c = x * k.sw - k.pw + j;
                                    if (row < 0 || row >= k.ih || c < 0 || c >= k.iw)
                                        std::memset(out, 0, run);
                                    else
                                        std::memcpy(out, src + ((n * k.ih + row) * k.iw + c) * k.ic,
                                                    run);
                                }
                            }
                        }
                    });
}

// The filter's shape (OC, IC, KH, KW) in OHWI memory order: the matrix whose row oc the im2col
// rows multiply (and the filter gradient's row).
TensorLayout ohwi(const TensorLayout& filter) {
    return channels_last_layout(filter, filter.dtype);
}

// The filter (any strides) copied dense in OHWI order, by the tiled transposing copy.
void pack_filter(const TensorND& filter, void* out) {
    relayout_copy(filter, TensorND(out, ohwi(filter.layout)));
}

// Whether the filter already lies as pack_filter writes it (a channels-last parameter).
bool filter_packed(const TensorLayout& f) {
    return nhwc_dense(f);
}

// A float32 matrix product planned once: its memories get the call's pointers, its scratchpad a
// slice of the workspace.
class Matmul {
public:
    // Not ok() where oneDNN's bfloat16 matmul is not an AMX kernel on this CPU: the rule's
    // figures are AMX's, and below it the direct kernels were not measured against gemm.
    Matmul(const dnnl::engine& engine, const memory::desc& a, const memory::desc& b,
           const memory::desc& c, WorkspacePlan& ws) {
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), user_scratchpad(), engine);
        m_impl = pd.impl_info_str();
        if (m_impl.find("amx") == std::string::npos)
            return;
        m_prim = dnnl::matmul(pd);
        m_a = memory(a, engine, nullptr);
        m_b = memory(b, engine, nullptr);
        m_c = memory(c, engine, nullptr);
        m_scratch = memory(pd.scratchpad_desc(), engine, nullptr);
        m_scratch_off = ws.add(pd.scratchpad_desc().get_size());
    }
    bool ok() const { return bool(m_prim); }
    const std::string& impl() const { return m_impl; }

    void run(const void* a, const void* b, void* c, std::byte* ws, dnnl::stream& stream) {
        m_a.set_data_handle(const_cast<void*>(a));
        m_b.set_data_handle(const_cast<void*>(b));
        m_c.set_data_handle(c);
        m_scratch.set_data_handle(ws + m_scratch_off);
        m_prim.execute(stream, {{DNNL_ARG_SRC, m_a},
                                {DNNL_ARG_WEIGHTS, m_b},
                                {DNNL_ARG_DST, m_c},
                                {DNNL_ARG_SCRATCHPAD, m_scratch}});
        stream.wait();
    }

private:
    std::string m_impl;
    dnnl::matmul m_prim;
    memory m_a, m_b, m_c, m_scratch;
    size_t m_scratch_off = 0;
};

memory::desc matrix(int64_t rows, int64_t cols, memory::data_type type, bool transposed = false) {
    return memory::desc({rows, cols}, type,
                        transposed ? memory::dims{1, rows} : memory::dims{cols, 1});
}

constexpr auto kBf16 = memory::data_type::bf16;
constexpr auto kF32 = memory::data_type::f32;

// A data tensor as the plan reads or writes it, dense NHWC: the tensor itself where it lies so
// (autocast's channels-last activations), else a buffer of the workspace that a tiled copy fills
// before (an input) or empties after (an output): a traced graph's row-major tensors.
class Staged {
public:
    Staged(const TensorLayout& l, WorkspacePlan& ws)
        : m_offset(nhwc_dense(l) ? SIZE_MAX : ws.add(l.total_nr_elems() * sizeof(Bits))) {}

    const Bits* in(const TensorND& t, std::byte* ws) const {
        if (m_offset == SIZE_MAX)
            return static_cast<const Bits*>(t.raw_ptr());
        relayout_copy(t, buffer(t, ws));
        return reinterpret_cast<const Bits*>(ws + m_offset);
    }
    Bits* out(const TensorND& t, std::byte* ws) const {
        return static_cast<Bits*>(m_offset == SIZE_MAX ? t.raw_ptr() : ws + m_offset);
    }
    void finish(const TensorND& t, std::byte* ws) const {
        if (m_offset != SIZE_MAX)
            relayout_copy(buffer(t, ws), t);
    }

private:
    TensorND buffer(const TensorND& t, std::byte* ws) const {
        return TensorND(ws + m_offset, channels_last_layout(t.layout, t.layout.dtype));
    }
    size_t m_offset;
};

class Im2colPlan : public Plan {
public:
    Im2colPlan(const Geometry& k) : m_k(k) {}
    size_t workspace_in_bytes() const override { return m_ws.total(); }
    const char* name() const override { return m_name.c_str(); }

protected:
    // Names the plan after the product's kernel; false where that is not an AMX one.
    bool take(const Matmul& mm) {
        m_name = "onednn:" + mm.impl() + ":im2col";
        return mm.ok();
    }

    Geometry m_k;
    WorkspacePlan m_ws;
    std::string m_name;
};

// dst[(n, oh, ow), oc] = col x filter^T, written into the NHWC dst directly.
class ForwardPlan final : public Im2colPlan {
public:
    ForwardPlan(const dnnl::engine& engine, const Geometry& k, const TensorLayout& src,
                const TensorLayout& dst, bool packed)
        : Im2colPlan(k),
          m_src(src, m_ws),
          m_dst(dst, m_ws),
          m_col(m_ws.add(size_t(k.rows() * k.taps()) * sizeof(Bits))),
          m_filter(packed ? SIZE_MAX : m_ws.add(size_t(k.oc * k.taps()) * sizeof(Bits))),
          m_mm(engine, matrix(k.rows(), k.taps(), kBf16), matrix(k.taps(), k.oc, kBf16, true),
               matrix(k.rows(), k.oc, kBf16), m_ws) {}
    bool ok() { return take(m_mm); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        auto* col = reinterpret_cast<Bits*>(ws.ptr + m_col);
        im2col(m_k, m_src.in(t[0], ws.ptr), col);
        const void* filter = t[1].raw_ptr();
        if (m_filter != SIZE_MAX) {
            pack_filter(t[1], ws.ptr + m_filter);
            filter = ws.ptr + m_filter;
        }
        m_mm.run(col, filter, m_dst.out(t[2], ws.ptr), ws.ptr, stream);
        m_dst.finish(t[2], ws.ptr);
    }

private:
    Staged m_src, m_dst;
    size_t m_col, m_filter;
    Matmul m_mm;
};

// dcol = diff x filter in float32, then each input pixel sums the taps that read it and is
// rounded once.
class BackwardDataPlan final : public Im2colPlan {
public:
    BackwardDataPlan(const dnnl::engine& engine, const Geometry& k, const TensorLayout& diff,
                     const TensorLayout& grad, bool packed)
        : Im2colPlan(k),
          m_diff(diff, m_ws),
          m_grad(grad, m_ws),
          m_dcol(m_ws.add(size_t(k.rows() * k.taps()) * sizeof(float))),
          m_filter(packed ? SIZE_MAX : m_ws.add(size_t(k.oc * k.taps()) * sizeof(Bits))),
          m_mm(engine, matrix(k.rows(), k.oc, kBf16), matrix(k.oc, k.taps(), kBf16),
               matrix(k.rows(), k.taps(), kF32), m_ws) {}
    bool ok() { return take(m_mm); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        const void* filter = t[0].raw_ptr();
        if (m_filter != SIZE_MAX) {
            pack_filter(t[0], ws.ptr + m_filter);
            filter = ws.ptr + m_filter;
        }
        auto* dcol = reinterpret_cast<float*>(ws.ptr + m_dcol);
        m_mm.run(m_diff.in(t[1], ws.ptr), filter, dcol, ws.ptr, stream);
        col2im(dcol, m_grad.out(t[2], ws.ptr));
        m_grad.finish(t[2], ws.ptr);
    }

private:
    void col2im(const float* dcol, Bits* grad) const {
        const Geometry& k = m_k;
        const size_t pixels = size_t(k.n * k.ih * k.iw);
        parallel_ranges(pixels, pixels * size_t(k.ic * k.kh * k.kw), kParallelGrain,
                        [&](size_t begin, size_t end) {
                            std::vector<float> acc(size_t(k.ic));
                            for (size_t p = begin; p < end; ++p) {
                                const int64_t x = int64_t(p) % k.iw, y = int64_t(p) / k.iw % k.ih,
                                              n = int64_t(p) / (k.iw * k.ih);
                                std::fill(acc.begin(), acc.end(), 0.f);
                                for (int64_t i = 0; i < k.kh; ++i) {
                                    const int64_t ty = y + k.ph - i;
                                    if (ty < 0 || ty % k.sh != 0 || ty / k.sh >= k.oh)
                                        continue;
                                    for (int64_t j = 0; j < k.kw; ++j) {
                                        const int64_t tx = x + k.pw - j;
                                        if (tx < 0 || tx % k.sw != 0 || tx / k.sw >= k.ow)
                                            continue;
                                        const float* in =
                                                dcol +
                                                ((n * k.oh + ty / k.sh) * k.ow + tx / k.sw) *
                                                        k.taps() +
                                                (i * k.kw + j) * k.ic;
                                        float* a = acc.data();
                                        for (int64_t c = 0; c < k.ic; ++c)
                                            a[c] += in[c];
                                    }
                                }
                                type_cvt_run(dtype::Float32, dtype::BFloat16, acc.data(),
                                             grad + int64_t(p) * k.ic, size_t(k.ic));
                            }
                        });
    }

    Staged m_diff, m_grad;
    size_t m_dcol, m_filter;
    Matmul m_mm;
};

// dfilter = diff^T x col in float32, rounded once into the gradient's layout (OIHW shape, any
// strides).
class BackwardFilterPlan final : public Im2colPlan {
public:
    BackwardFilterPlan(const dnnl::engine& engine, const Geometry& k, const TensorLayout& src,
                       const TensorLayout& diff)
        : Im2colPlan(k),
          m_src(src, m_ws),
          m_diff(diff, m_ws),
          m_col(m_ws.add(size_t(k.rows() * k.taps()) * sizeof(Bits))),
          m_dw(m_ws.add(size_t(k.oc * k.taps()) * sizeof(float))),
          m_staging(m_ws.add(size_t(k.oc * k.taps()) * sizeof(Bits))),
          m_mm(engine, matrix(k.oc, k.rows(), kBf16, true), matrix(k.rows(), k.taps(), kBf16),
               matrix(k.oc, k.taps(), kF32), m_ws) {}
    bool ok() { return take(m_mm); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        auto* col = reinterpret_cast<Bits*>(ws.ptr + m_col);
        im2col(m_k, m_src.in(t[0], ws.ptr), col);
        auto* dw = reinterpret_cast<float*>(ws.ptr + m_dw);
        m_mm.run(m_diff.in(t[1], ws.ptr), col, dw, ws.ptr, stream);
        unpack(dw, t[2], ws.ptr + m_staging);
    }

private:
    // Rounds the float32 product into grad: at once where grad lies in OHWI order (the filter
    // gradient follows a channels-last src), else through a bfloat16 copy in the workspace.
    void unpack(const float* dw, const TensorND& grad, std::byte* staging) const {
        const size_t n = size_t(m_k.oc * m_k.taps());
        const bool direct = filter_packed(grad.layout);
        void* out = direct ? grad.raw_ptr() : staging;
        parallel_ranges(n, n, kParallelGrain, [&](size_t begin, size_t end) {
            type_cvt_run(dtype::Float32, dtype::BFloat16, dw + begin,
                         static_cast<Bits*>(out) + begin, end - begin);
        });
        if (!direct)
            relayout_copy(TensorND(staging, ohwi(grad.layout)), grad);
    }

    Staged m_src, m_diff;
    size_t m_col, m_dw, m_staging;
    Matmul m_mm;
};

}  // namespace

bool im2col_lowp_chosen(ConvPass pass, const ConvDims& g, const TensorLayout& src,
                        const TensorLayout& filter, const TensorLayout& dst) {
    if (src.dtype != dtype::BFloat16 || src.ndim != 4 || g.group != 1 || g.flip)
        return false;
    for (auto d : g.dilate)
        if (d != 0)
            return false;
    if (filter[2] * filter[3] == 1 || src[1] < 16 || dst[1] < 16)
        return false;
    const bool strided = g.stride[0] > 1 || g.stride[1] > 1;
    const size_t ow = dst[3];
    switch (pass) {
        case ConvPass::forward:
            return ow <= 4;
        case ConvPass::backward_data:
            return ow <= 4 || (strided && ow <= 8);
        case ConvPass::backward_filter:
            return ow <= 8 || strided;
        case ConvPass::forward_const_filter:
            return false;
    }
    return false;
}

std::unique_ptr<Plan> im2col_lowp_plan(ConvPass pass, const dnnl::engine& engine, const ConvDims& g,
                                       const TensorLayout& src, const TensorLayout& filter,
                                       const TensorLayout& dst) {
    const Geometry k(g, src, filter, dst);
    switch (pass) {
        case ConvPass::forward: {
            auto plan = std::make_unique<ForwardPlan>(engine, k, src, dst, filter_packed(filter));
            return plan->ok() ? std::move(plan) : nullptr;
        }
        case ConvPass::backward_data: {
            auto plan =
                    std::make_unique<BackwardDataPlan>(engine, k, dst, src, filter_packed(filter));
            return plan->ok() ? std::move(plan) : nullptr;
        }
        case ConvPass::backward_filter: {
            auto plan = std::make_unique<BackwardFilterPlan>(engine, k, src, dst);
            return plan->ok() ? std::move(plan) : nullptr;
        }
        case ConvPass::forward_const_filter:
            return nullptr;
    }
    return nullptr;
}

}  // namespace neomeg::dnn::x86
