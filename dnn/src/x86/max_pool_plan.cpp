#include "src/x86/max_pool_plan.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "neomeg/dnn/params/pooling.h"
#include "src/x86/max_pool_hwy.h"
#include "src/x86/max_pool_lanes_backward_hwy.h"
#include "src/x86/max_pool_rows_backward_hwy.h"
#include "src/x86/parallel.h"
#include "src/x86/stream_copy_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// A float32 NC[D]HW tensor's strides: per image, per channel, and along depth, height and width
// (0 for the missing leading spatial axes).
struct Axes {
    ptrdiff_t n = 0, c = 0, sp[3] = {0, 0, 0};
};

Axes axes_of(const TensorLayout& l, size_t spatial) {
    Axes a;
    a.n = l.stride[0];
    a.c = l.stride[1];
    for (size_t i = 0; i < spatial; ++i)
        a.sp[3 - spatial + i] = l.stride[2 + i];
    return a;
}

// The window over `spatial` axes of src (from axis `first`) into dst, as PoolDims with leading
// axes of extent 1; nullopt where the parameters do not match the shapes.
std::optional<PoolDims> dims_of_window(const param::Pooling& p, const TensorLayout& src,
                                       const TensorLayout& dst, size_t first, size_t spatial) {
    if (p.window.size() != spatial || p.stride.size() != spatial || p.padding.size() != spatial)
        return std::nullopt;
    PoolDims g{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}};
    for (size_t i = 0; i < spatial; ++i) {
        size_t a = 3 - spatial + i;
        if (p.window[i] <= 0 || p.stride[i] <= 0 || p.padding[i] < 0 || p.padding[i] >= p.window[i])
            return std::nullopt;
        g.in[a] = src[first + i];
        g.out[a] = dst[first + i];
        g.k[a] = static_cast<size_t>(p.window[i]);
        g.s[a] = static_cast<size_t>(p.stride[i]);
        g.p[a] = static_cast<size_t>(p.padding[i]);
    }
    return g;
}

// The dtypes of our forward loops: float32, and bfloat16 compared as float32 (oneDNN's bfloat16
// kernels skip NaNs as its float32 ones do).
bool pooled_dtype(DType dt) {
    return dt == dtype::Float32 || dt == dtype::BFloat16;
}

bool plain_pooled(const TensorLayout& l) {
    return pooled_dtype(l.dtype) && l.ndim >= 3 && l.ndim <= 5 && !l.is_empty();
}

// Whether l's elements fill its memory without gaps in some axis order (row-major, a
// channels-last view): such a tensor can be scanned as one run from its base pointer.
bool dense_in_some_order(const TensorLayout& l) {
    std::vector<std::pair<ptrdiff_t, size_t>> axes;
    for (size_t i = 0; i < l.ndim; ++i)
        if (l[i] != 1)
            axes.emplace_back(l.stride[i], l[i]);
    std::sort(axes.begin(), axes.end());
    ptrdiff_t expect = 1;
    for (const auto& [stride, extent] : axes) {
        if (stride != expect)
            return false;
        expect *= static_cast<ptrdiff_t>(extent);
    }
    return true;
}

bool unit_w(const TensorLayout& l) {
    return l[l.ndim - 1] == 1 || l.stride[l.ndim - 1] == 1;
}

float widen(float v) {
    return v;
}

float widen(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// A maximum back in its dtype: exact, since it is one of the values widened.
template <class T>
T narrow(float v) {
    if constexpr (std::is_same_v<T, float>)
        return v;
    else
        return static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
}

class MaxPoolForwardPlan final : public Plan {
public:
    // kLanes: channels adjacent (channels-last); kRows: planes with unit stride along W;
    // kBlocked: (N, C / b, [D,] H, W, b) contiguous, a block of b lanes per position; kStrided:
    // any other strides, one window at a time.
    enum class Kind { kRows, kLanes, kBlocked, kStrided };

    MaxPoolForwardPlan(Kind kind, DType dtype, const PoolDims& g, size_t n, size_t c, size_t lanes,
                       const Axes& src, const Axes& dst)
        : m_kind(kind),
          m_bf16(dtype == dtype::BFloat16),
          m_g(g),
          m_n(n),
          m_c(c),
          m_lanes(lanes),
          m_src(src),
          m_dst(dst) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:max_pool"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        if (m_bf16)
            run_as(static_cast<const uint16_t*>(t[0].raw_ptr()),
                   static_cast<uint16_t*>(t[1].raw_ptr()));
        else
            run_as(static_cast<const float*>(t[0].raw_ptr()), static_cast<float*>(t[1].raw_ptr()));
    }

private:
    static void lanes_of(const float* s, const ptrdiff_t* ss, float* o, const ptrdiff_t* ds,
                         size_t lanes, const PoolDims& g) {
        max_pool_lanes(s, ss, o, ds, lanes, g);
    }

    static void lanes_of(const uint16_t* s, const ptrdiff_t* ss, uint16_t* o, const ptrdiff_t* ds,
                         size_t lanes, const PoolDims& g) {
        max_pool_lanes_bf16(s, ss, o, ds, lanes, g);
    }

    template <class T>
    void run_as(const T* src, T* dst) const {
        const size_t out = m_g.out[0] * m_g.out[1] * m_g.out[2];
        const size_t taps = m_g.k[0] * m_g.k[1] * m_g.k[2];
        if (m_kind == Kind::kLanes) {
            parallel_ranges(m_n, m_n * m_c * out * taps, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t n = b; n < e; ++n)
                    lanes_of(src + static_cast<ptrdiff_t>(n) * m_src.n, m_src.sp,
                             dst + static_cast<ptrdiff_t>(n) * m_dst.n, m_dst.sp, m_c, m_g);
            });
            return;
        }
        const size_t planes = m_n * m_c;
        parallel_ranges(planes, planes * m_lanes * out * taps, kParallelGrain,
                        [&](size_t b, size_t e) {
                            for (size_t u = b; u < e; ++u) {
                                const auto n = static_cast<ptrdiff_t>(u / m_c),
                                           c = static_cast<ptrdiff_t>(u % m_c);
                                const T* s = src + n * m_src.n + c * m_src.c;
                                T* o = dst + n * m_dst.n + c * m_dst.c;
                                if (m_kind == Kind::kRows)
                                    rows_plane(s, o);
                                else if (m_kind == Kind::kStrided)
                                    strided_plane(s, o);
                                else
                                    lanes_of(s, m_src.sp, o, m_dst.sp, m_lanes, m_g);
                            }
                        });
    }

    void rows_plane(const float* s, float* o) const {
        max_pool_rows(s, m_src.sp, o, m_dst.sp, m_g);
    }

    void rows_plane(const uint16_t* s, uint16_t* o) const {
        max_pool_rows_bf16(s, m_src.sp, o, m_dst.sp, m_g);
    }

    template <class T>
    void strided_plane(const T* s, T* o) const {
        const PoolDims& g = m_g;
        for (size_t oz = 0; oz < g.out[0]; ++oz)
            for (size_t oy = 0; oy < g.out[1]; ++oy)
                for (size_t ox = 0; ox < g.out[2]; ++ox) {
                    auto [z0, z1] = g.window(0, oz);
                    auto [y0, y1] = g.window(1, oy);
                    auto [x0, x1] = g.window(2, ox);
                    float best = -std::numeric_limits<float>::infinity();
                    for (ptrdiff_t z = z0; z < z1; ++z)
                        for (ptrdiff_t y = y0; y < y1; ++y)
                            for (ptrdiff_t x = x0; x < x1; ++x) {
                                float v = widen(
                                        s[z * m_src.sp[0] + y * m_src.sp[1] + x * m_src.sp[2]]);
                                if (!std::isnan(best) && (std::isnan(v) || v > best))
                                    best = v;
                            }
                    o[static_cast<ptrdiff_t>(oz) * m_dst.sp[0] +
                      static_cast<ptrdiff_t>(oy) * m_dst.sp[1] +
                      static_cast<ptrdiff_t>(ox) * m_dst.sp[2]] = narrow<T>(best);
                }
    }

    Kind m_kind;
    bool m_bf16;
    PoolDims m_g;
    size_t m_n, m_c, m_lanes;
    Axes m_src, m_dst;
};

// The first maximum of each window (a NaN wins, the first of them), as naive finds it, gets the
// window's gradient; windows overlap, so the gradients add (in float32, rounded once per element
// as naive rounds its sums). Whether a window holds a NaN is read from dst, the forward's output
// (a NaN exactly there, as our forward and naive give it): a quarter of src's size for the usual
// windows of stride 2. float32 or bfloat16 (T: float or dt_bfloat16).
template <class T>
class NaNCheckedMaxBackwardPlan final : public Plan {
public:
    NaNCheckedMaxBackwardPlan(std::unique_ptr<Plan> inner, const PoolDims& g,
                              const TensorLayout& src, const TensorLayout& dst,
                              const TensorLayout& diff, const TensorLayout& grad, size_t spatial)
        : m_inner(std::move(inner)),
          m_g(g),
          m_shape(src),
          m_src(axes_of(src, spatial)),
          m_dst(axes_of(dst, spatial)),
          m_diff(axes_of(diff, spatial)),
          m_grad(axes_of(grad, spatial)),
          m_dst_dense(dense_in_some_order(dst)) {}

    size_t workspace_in_bytes() const override { return m_inner->workspace_in_bytes(); }
    const char* name() const override { return m_inner->name(); }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream& stream) override {
        if (!has_nan_or_minus_inf(static_cast<const T*>(t[1].raw_ptr())))
            return m_inner->run(t, ws, stream);
        naive_rule(static_cast<const T*>(t[0].raw_ptr()), static_cast<const T*>(t[2].raw_ptr()),
                   static_cast<T*>(t[3].raw_ptr()));
    }

private:
    static bool dense_check(const float* p, size_t n) { return any_nan_or_minus_inf(p, n); }

    static bool dense_check(const dt_bfloat16* p, size_t n) {
        return any_nan_or_minus_inf_bf16(reinterpret_cast<const uint16_t*>(p), n);
    }

    bool has_nan_or_minus_inf(const T* dst) const {
        const size_t planes = m_shape[0] * m_shape[1];
        const size_t plane = m_g.out[0] * m_g.out[1] * m_g.out[2];
        if (m_dst_dense) {
            // Across threads in chunks: on one thread the scan of dst cost 0.15 ms of a 1.6 ms
            // bfloat16 32x64x56x56 backward on two, which oneDNN's part halves.
            const size_t n = planes * plane;
            constexpr size_t kChunk = size_t(1) << 14;
            const size_t chunks = (n + kChunk - 1) / kChunk;
            std::atomic<bool> found{false};
            parallel_ranges(chunks, n, kParallelGrain, [&](size_t b, size_t e) {
                const size_t lo = b * kChunk, hi = std::min(n, e * kChunk);
                if (dense_check(dst + lo, hi - lo))
                    found.store(true, std::memory_order_relaxed);
            });
            return found.load(std::memory_order_relaxed);
        }
        for (size_t u = 0; u < planes; ++u) {
            const T* s = plane_of(dst, m_dst, u);
            for (size_t z = 0; z < m_g.out[0]; ++z)
                for (size_t y = 0; y < m_g.out[1]; ++y)
                    for (size_t x = 0; x < m_g.out[2]; ++x)
                        if (const float v = static_cast<float>(s[at(m_dst, z, y, x)]);
                            std::isnan(v) || v == -std::numeric_limits<float>::infinity())
                            return true;
        }
        return false;
    }

    template <class U>
    U* plane_of(U* base, const Axes& a, size_t u) const {
        return base + static_cast<ptrdiff_t>(u / m_shape[1]) * a.n +
               static_cast<ptrdiff_t>(u % m_shape[1]) * a.c;
    }

    static ptrdiff_t at(const Axes& a, ptrdiff_t z, ptrdiff_t y, ptrdiff_t x) {
        return z * a.sp[0] + y * a.sp[1] + x * a.sp[2];
    }

    void naive_rule(const T* src, const T* diff, T* grad) const {
        const size_t planes = m_shape[0] * m_shape[1];
        const PoolDims& g = m_g;
        parallel_ranges(planes, planes * g.in[0] * g.in[1] * g.in[2], kParallelGrain,
                        [&](size_t b, size_t e) {
                            std::vector<float> acc(g.in[0] * g.in[1] * g.in[2]);
                            for (size_t u = b; u < e; ++u)
                                plane_grad(plane_of(src, m_src, u), plane_of(diff, m_diff, u),
                                           plane_of(grad, m_grad, u), acc);
                        });
    }

    // One plane's gradient summed in `acc` (dense over the plane), then written to gr.
    void plane_grad(const T* s, const T* dy, T* gr, std::vector<float>& acc) const {
        const PoolDims& g = m_g;
        std::fill(acc.begin(), acc.end(), 0.f);
        const Axes dense{
                0,
                0,
                {static_cast<ptrdiff_t>(g.in[1] * g.in[2]), static_cast<ptrdiff_t>(g.in[2]), 1}};
        for (size_t oz = 0; oz < g.out[0]; ++oz)
            for (size_t oy = 0; oy < g.out[1]; ++oy)
                for (size_t ox = 0; ox < g.out[2]; ++ox) {
                    auto [z0, z1] = g.window(0, oz);
                    auto [y0, y1] = g.window(1, oy);
                    auto [x0, x1] = g.window(2, ox);
                    ptrdiff_t best_at = -1;
                    float best = 0.f;
                    for (ptrdiff_t z = z0; z < z1; ++z)
                        for (ptrdiff_t y = y0; y < y1; ++y)
                            for (ptrdiff_t x = x0; x < x1; ++x) {
                                const auto v = static_cast<float>(s[at(m_src, z, y, x)]);
                                if (best_at < 0 ||
                                    (!std::isnan(best) && (std::isnan(v) || v > best))) {
                                    best = v;
                                    best_at = at(dense, z, y, x);
                                }
                            }
                    if (best_at >= 0)
                        acc[static_cast<size_t>(best_at)] += static_cast<float>(
                                dy[at(m_diff, static_cast<ptrdiff_t>(oz),
                                      static_cast<ptrdiff_t>(oy), static_cast<ptrdiff_t>(ox))]);
                }
        for (size_t z = 0; z < g.in[0]; ++z)
            for (size_t y = 0; y < g.in[1]; ++y)
                for (size_t x = 0; x < g.in[2]; ++x)
                    gr[at(m_grad, z, y, x)] = T(acc[(z * g.in[1] + y) * g.in[2] + x]);
    }

    std::unique_ptr<Plan> m_inner;
    PoolDims m_g;
    TensorShape m_shape;
    Axes m_src, m_dst, m_diff, m_grad;
    bool m_dst_dense;
};

// MAX pooling's backward on float32 or bfloat16 tensors whose channels are adjacent
// (channels-last, or blocked seen as planes: each image's positions hold `lanes` values), in our
// loop (max_pool_lanes_backward_hwy.h), which keeps naive's NaN rule itself: dst is not read.
class MaxPoolLanesBackwardPlan final : public Plan {
public:
    MaxPoolLanesBackwardPlan(DType dtype, const PoolDims& g, size_t n, size_t lanes,
                             const Axes& src, const Axes& diff, const Axes& grad)
        : m_bf16(dtype == dtype::BFloat16),
          m_g(g),
          m_n(n),
          m_lanes(lanes),
          m_src(src),
          m_diff(diff),
          m_grad(grad) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:max_pool_backward_lanes"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        if (m_bf16)
            run_as(static_cast<const uint16_t*>(t[0].raw_ptr()),
                   static_cast<const uint16_t*>(t[2].raw_ptr()),
                   static_cast<uint16_t*>(t[3].raw_ptr()));
        else
            run_as(static_cast<const float*>(t[0].raw_ptr()),
                   static_cast<const float*>(t[2].raw_ptr()), static_cast<float*>(t[3].raw_ptr()));
    }

private:
    static void image(const float* s, const ptrdiff_t* ss, const float* dy, const ptrdiff_t* ys,
                      float* gr, const ptrdiff_t* gs, size_t lanes, const PoolDims& g, bool) {
        max_pool_lanes_backward(s, ss, dy, ys, gr, gs, lanes, g);
    }

    static void image(const uint16_t* s, const ptrdiff_t* ss, const uint16_t* dy,
                      const ptrdiff_t* ys, uint16_t* gr, const ptrdiff_t* gs, size_t lanes,
                      const PoolDims& g, bool stream) {
        max_pool_lanes_backward_bf16(s, ss, dy, ys, gr, gs, lanes, g, stream);
    }

    template <class T>
    void run_as(const T* src, const T* diff, T* grad) const {
        const size_t elems = m_n * m_lanes * m_g.in[0] * m_g.in[1] * m_g.in[2];
        // grad past the caches (kStreamBytes): stored around them (bfloat16).
        const bool stream = elems * sizeof(T) >= kStreamBytes;
        parallel_ranges(m_n, elems * 4, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t n = b; n < e; ++n) {
                const auto i = static_cast<ptrdiff_t>(n);
                image(src + i * m_src.n, m_src.sp, diff + i * m_diff.n, m_diff.sp,
                      grad + i * m_grad.n, m_grad.sp, m_lanes, m_g, stream);
            }
        });
    }

    bool m_bf16;
    PoolDims m_g;
    size_t m_n, m_lanes;
    Axes m_src, m_diff, m_grad;
};

// MAX pooling's backward on float32 or bfloat16 planes with unit stride along W (plain NC[D]HW)
// for 3x3/2 pad 1 windows, in our loop (max_pool_rows_backward_hwy.h), which keeps naive's NaN
// rule itself: dst is not read. Planes (image, channel) split across threads.
class MaxPoolRowsBackwardPlan final : public Plan {
public:
    MaxPoolRowsBackwardPlan(DType dtype, const PoolDims& g, size_t n, size_t c, const Axes& src,
                            const Axes& diff, const Axes& grad)
        : m_bf16(dtype == dtype::BFloat16),
          m_g(g),
          m_n(n),
          m_c(c),
          m_src(src),
          m_diff(diff),
          m_grad(grad) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "loop:max_pool_backward_rows"; }

    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        if (m_bf16)
            run_as(static_cast<const uint16_t*>(t[0].raw_ptr()),
                   static_cast<const uint16_t*>(t[2].raw_ptr()),
                   static_cast<uint16_t*>(t[3].raw_ptr()));
        else
            run_as(static_cast<const float*>(t[0].raw_ptr()),
                   static_cast<const float*>(t[2].raw_ptr()), static_cast<float*>(t[3].raw_ptr()));
    }

private:
    static void plane(const float* s, const ptrdiff_t* ss, const float* dy, const ptrdiff_t* ys,
                      float* gr, const ptrdiff_t* gs, const PoolDims& g, bool cached) {
        max_pool_rows_backward(s, ss, dy, ys, gr, gs, g, cached);
    }

    static void plane(const uint16_t* s, const ptrdiff_t* ss, const uint16_t* dy,
                      const ptrdiff_t* ys, uint16_t* gr, const ptrdiff_t* gs, const PoolDims& g,
                      bool) {
        max_pool_rows_backward_bf16(s, ss, dy, ys, gr, gs, g);
    }

    template <class T>
    void run_as(const T* src, const T* diff, T* grad) const {
        const size_t planes = m_n * m_c;
        const size_t work = planes * m_g.in[0] * m_g.in[1] * m_g.in[2] * 4;
        auto at = [&](size_t u, const Axes& a) {
            return static_cast<ptrdiff_t>(u / m_c) * a.n + static_cast<ptrdiff_t>(u % m_c) * a.c;
        };
        // Planes evenly spaced in all three tensors (dense NC[D]HW): a thread's run of planes is
        // one call, its planes as the kernel's depth slices, so that the kernel's setup (edge
        // masks, tables, buffers) is paid once a run, not once a plane (7 of 125 us for
        // 2x64x56x56 at one thread).
        const size_t depth = m_g.in[0];
        auto step = [&](const Axes& a) { return m_c == 1 ? a.n : a.c; };
        auto even = [&](const Axes& a) {
            return (m_n == 1 || m_c == 1 || a.n == static_cast<ptrdiff_t>(m_c) * a.c) &&
                   (depth == 1 || step(a) == static_cast<ptrdiff_t>(depth) * a.sp[0]);
        };
        const bool runs = even(m_src) && even(m_diff) && even(m_grad);
        auto slices = [&](const Axes& a) {
            return std::array<ptrdiff_t, 3>{depth == 1 ? step(a) : a.sp[0], a.sp[1], a.sp[2]};
        };
        const auto ss = slices(m_src), ys = slices(m_diff), gs = slices(m_grad);
        // src, diff and grad in the caches (2x64x56x56 float32: 3.6 MB): the kernel's strips walk
        // whole planes (from memory, bands of window rows that the prefetchers follow).
        constexpr size_t kCachedBytes = size_t(4) << 20;
        const size_t hw = m_g.in[0] * m_g.in[1] * m_g.in[2];
        const size_t ohw = m_g.out[0] * m_g.out[1] * m_g.out[2];
        const bool cached = planes * (2 * hw + ohw) * sizeof(T) <= kCachedBytes;
        parallel_ranges(planes, work, kParallelGrain, [&](size_t b, size_t e) {
            if (runs) {
                PoolDims g = m_g;
                g.in[0] = g.out[0] = (e - b) * depth;
                plane(src + at(b, m_src), ss.data(), diff + at(b, m_diff), ys.data(),
                      grad + at(b, m_grad), gs.data(), g, cached);
                return;
            }
            for (size_t u = b; u < e; ++u)
                plane(src + at(u, m_src), m_src.sp, diff + at(u, m_diff), m_diff.sp,
                      grad + at(u, m_grad), m_grad.sp, m_g, cached);
        });
    }

    bool m_bf16;
    PoolDims m_g;
    size_t m_n, m_c;
    Axes m_src, m_diff, m_grad;
};

}  // namespace

std::unique_ptr<Plan> max_pool_backward_plan(const param::Pooling& p, const TensorLayout& src,
                                             const TensorLayout& diff, const TensorLayout& grad) {
    const bool f32 = src.dtype == dtype::Float32, bf16 = src.dtype == dtype::BFloat16;
    if (p.mode != param::Pooling::Mode::MAX || !(f32 || bf16) || diff.dtype != src.dtype ||
        grad.dtype != src.dtype || src.ndim < 3 || src.ndim > 5 || src.is_empty() ||
        !grad.eq_shape(src) || diff.ndim != src.ndim || diff[0] != src[0] || diff[1] != src[1])
        return nullptr;
    const size_t spatial = src.ndim - 2;
    auto g = dims_of_window(p, src, diff, 2, spatial);
    if (!g)
        return nullptr;
    // Channels adjacent: a vector's lanes are channels (2x2/2 and other windows that tile, 3x3/2
    // pad 1).
    // bfloat16: 3x3/2 pad 1 only (other windows run oneDNN behind the NaN check).
    const bool lanes_take =
            f32 ? max_pool_lanes_backward_takes(*g) : max_pool_lanes_backward_bf16_takes(*g);
    if (lanes_take && src[1] > 1 && src.stride[1] == 1 && diff.stride[1] == 1 &&
        grad.stride[1] == 1)
        return std::make_unique<MaxPoolLanesBackwardPlan>(
                src.dtype, *g, src[0], src[1], axes_of(src, spatial), axes_of(diff, spatial),
                axes_of(grad, spatial));
    // Unit stride along W: a vector's lanes are output columns (3x3/2 pad 1).
    if (max_pool_rows_backward_takes(*g) && unit_w(src) && unit_w(diff) && unit_w(grad))
        return std::make_unique<MaxPoolRowsBackwardPlan>(
                src.dtype, *g, src[0], src[1], axes_of(src, spatial), axes_of(diff, spatial),
                axes_of(grad, spatial));
    return nullptr;
}

std::unique_ptr<Plan> max_pool_forward_plan(const param::Pooling& p, const TensorLayout& src,
                                            const TensorLayout& dst) {
    if (p.mode != param::Pooling::Mode::MAX || !plain_pooled(src) || !plain_pooled(dst) ||
        dst.dtype != src.dtype || dst.ndim != src.ndim || dst[0] != src[0] || dst[1] != src[1])
        return nullptr;
    const size_t spatial = src.ndim - 2;
    auto g = dims_of_window(p, src, dst, 2, spatial);
    if (!g)
        return nullptr;
    using Kind = MaxPoolForwardPlan::Kind;
    Axes sa = axes_of(src, spatial), da = axes_of(dst, spatial);
    if (unit_w(src) && unit_w(dst))
        return std::make_unique<MaxPoolForwardPlan>(Kind::kRows, src.dtype, *g, src[0], src[1], 1,
                                                    sa, da);
    if (src[1] > 1 && src.stride[1] == 1 && dst.stride[1] == 1)
        return std::make_unique<MaxPoolForwardPlan>(Kind::kLanes, src.dtype, *g, src[0], src[1],
                                                    src[1], sa, da);
    return std::make_unique<MaxPoolForwardPlan>(Kind::kStrided, src.dtype, *g, src[0], src[1], 1,
                                                sa, da);
}

std::unique_ptr<Plan> max_pool_blocked_plan(const param::Pooling& p, const TensorLayout& src,
                                            const TensorLayout& dst) {
    if (p.mode != param::Pooling::Mode::MAX || !pooled_dtype(src.dtype) || dst.dtype != src.dtype ||
        src.ndim < 4 || src.ndim > 6 || dst.ndim != src.ndim || src.is_empty() ||
        !src.is_contiguous() || !dst.is_contiguous() || dst[0] != src[0] || dst[1] != src[1] ||
        dst[dst.ndim - 1] != src[src.ndim - 1])
        return nullptr;
    const size_t spatial = src.ndim - 3;
    auto g = dims_of_window(p, src, dst, 2, spatial);
    if (!g)
        return nullptr;
    return std::make_unique<MaxPoolForwardPlan>(MaxPoolForwardPlan::Kind::kBlocked, src.dtype, *g,
                                                src[0], src[1], src[src.ndim - 1],
                                                axes_of(src, spatial), axes_of(dst, spatial));
}

std::unique_ptr<Plan> nan_checked_max_backward(std::unique_ptr<Plan> inner, const param::Pooling& p,
                                               const TensorLayout& src, const TensorLayout& dst,
                                               const TensorLayout& diff, const TensorLayout& grad) {
    if (!inner || p.mode != param::Pooling::Mode::MAX || !plain_pooled(src) ||
        dst.dtype != src.dtype || !dst.eq_shape(diff) || diff.dtype != src.dtype ||
        grad.dtype != src.dtype)
        return inner;
    const size_t spatial = src.ndim - 2;
    auto g = dims_of_window(p, src, diff, 2, spatial);
    if (!g)
        return inner;
    if (src.dtype == dtype::BFloat16)
        return std::make_unique<NaNCheckedMaxBackwardPlan<dt_bfloat16>>(std::move(inner), *g, src,
                                                                        dst, diff, grad, spatial);
    return std::make_unique<NaNCheckedMaxBackwardPlan<float>>(std::move(inner), *g, src, dst, diff,
                                                              grad, spatial);
}

}  // namespace neomeg::dnn::x86
