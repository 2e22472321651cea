// AdaptivePoolingForward/Backward on x86. Where no output size exceeds its input size, MegEngine's
// adaptive windows (adaptive_range in src/common/pooling.h) are all of one length: that is
// fixed-window pooling (stride = in / out, window = in - (out - 1) * stride, no padding), run by
// the x86 PoolingForward/PoolingBackward (oneDNN and its plan cache, the tiled MAX backward). An
// output larger than its input gives windows of two lengths that may overlap; those run a loop of
// our own over (N, C) planes split across OpenMP threads, which takes naive's steps (double sums in
// row-major window order, the first maximum with NaN winning, one rounding per output or
// gradient element), so its results are naive's bits. Float dtypes, any strides.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "neomeg/dnn/operators/pooling.h"
#include "src/common/convolution_geometry.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/pooling.h"
#include "src/x86/handle.h"
#include "src/x86/kernel_report.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using Pos3 = std::array<size_t, kMaxPoolSpatial>;
using Range = std::pair<size_t, size_t>;

// Fixed-window params equal to an adaptive geometry, or false where some output size exceeds
// its input size.
bool uniform_pooling(const PoolGeometry& g, param::AdaptivePooling::Mode mode, param::Pooling& p) {
    p.mode = mode == param::AdaptivePooling::Mode::MAX ? param::Pooling::Mode::MAX
                                                       : param::Pooling::Mode::AVERAGE;
    p.window.clear();
    p.stride.clear();
    p.padding.assign(g.spatial, 0);
    for (size_t d = kMaxPoolSpatial - g.spatial; d < kMaxPoolSpatial; ++d) {
        if (g.in[d] < g.out[d])
            return false;
        auto [first, last] = adaptive_range(g.in[d], g.out[d], 0);
        p.window.push_back(static_cast<int32_t>(last - first));
        p.stride.push_back(static_cast<int32_t>(g.in[d] / g.out[d]));
    }
    return true;
}

// Each output position's window [first, last) per dim.
std::array<std::vector<Range>, kMaxPoolSpatial> window_ranges(const PoolGeometry& g) {
    std::array<std::vector<Range>, kMaxPoolSpatial> r;
    for (size_t d = 0; d < kMaxPoolSpatial; ++d)
        for (size_t o = 0; o < g.out[d]; ++o) {
            auto [first, last] = g.range(d, o);
            r[d].emplace_back(static_cast<size_t>(first), static_cast<size_t>(last));
        }
    return r;
}

// Strides of a layout over (N, C, D, H, W), and the element offset of a plane and position.
struct Strides5 {
    std::array<ptrdiff_t, 5> s;
    ptrdiff_t at(size_t n, size_t c, size_t z, size_t y, size_t x) const {
        return static_cast<ptrdiff_t>(n) * s[0] + static_cast<ptrdiff_t>(c) * s[1] +
               static_cast<ptrdiff_t>(z) * s[2] + static_cast<ptrdiff_t>(y) * s[3] +
               static_cast<ptrdiff_t>(x) * s[4];
    }
};

// Calls f(z, y, x) for each position of output o's window in row-major order.
template <class F>
void walk(const std::array<std::vector<Range>, kMaxPoolSpatial>& w, const Pos3& o, F&& f) {
    for (size_t z = w[0][o[0]].first; z < w[0][o[0]].second; ++z)
        for (size_t y = w[1][o[1]].first; y < w[1][o[1]].second; ++y)
            for (size_t x = w[2][o[2]].first; x < w[2][o[2]].second; ++x)
                f(z, y, x);
}

template <class F>
void for_each_out(const PoolGeometry& g, F&& f) {
    for (size_t z = 0; z < g.out[0]; ++z)
        for (size_t y = 0; y < g.out[1]; ++y)
            for (size_t x = 0; x < g.out[2]; ++x)
                f(Pos3{z, y, x});
}

size_t window_work(const PoolGeometry& g) {
    size_t in = g.in[0] * g.in[1] * g.in[2], out = g.out[0] * g.out[1] * g.out[2];
    // Overlapping windows read up to twice the input.
    return g.n * g.c * (2 * in + out);
}

// The first maximum of a window (row-major), a NaN counting as the maximum, and where it lies.
template <class T>
std::pair<float, Pos3> window_max(const T* s, const Strides5& ss, size_t n, size_t c,
                                  const std::array<std::vector<Range>, kMaxPoolSpatial>& w,
                                  const Pos3& o) {
    float best = 0;
    Pos3 at{};
    bool first = true;
    walk(w, o, [&](size_t z, size_t y, size_t x) {
        float v = static_cast<float>(s[ss.at(n, c, z, y, x)]);
        if (first || (!std::isnan(best) && (std::isnan(v) || v > best))) {
            best = v;
            at = {z, y, x};
            first = false;
        }
    });
    return {best, at};
}

// Outputs computed together along W: each keeps naive's order over its own window, and their
// independent running sums (or maxima) overlap in the pipeline, where one window's dependent
// double additions alone would wait on each other.
constexpr size_t kGroup = 8;

// Calls f(j, value) for each element of the windows of outputs (oz, oy, ox + j), j < m, each
// window in row-major order; those windows share their D and H ranges.
template <class T, class F>
void walk_group(const T* in, const Strides5& ss, const std::array<std::vector<Range>, 3>& w,
                size_t oz, size_t oy, size_t ox, size_t m, F&& f) {
    for (size_t z = w[0][oz].first; z < w[0][oz].second; ++z)
        for (size_t y = w[1][oy].first; y < w[1][oy].second; ++y) {
            const T* row =
                    in + static_cast<ptrdiff_t>(z) * ss.s[2] + static_cast<ptrdiff_t>(y) * ss.s[3];
            for (size_t j = 0; j < m; ++j)
                for (size_t x = w[2][ox + j].first; x < w[2][ox + j].second; ++x)
                    f(j, static_cast<float>(row[static_cast<ptrdiff_t>(x) * ss.s[4]]));
        }
}

template <class T>
void average_group(const T* in, const Strides5& ss, const std::array<std::vector<Range>, 3>& w,
                   size_t oz, size_t oy, size_t ox, size_t m, T* out, ptrdiff_t os) {
    std::array<double, kGroup> sum{};
    walk_group(in, ss, w, oz, oy, ox, m, [&](size_t j, float v) { sum[j] += v; });
    const size_t rows = (w[0][oz].second - w[0][oz].first) * (w[1][oy].second - w[1][oy].first);
    for (size_t j = 0; j < m; ++j) {
        size_t count = rows * (w[2][ox + j].second - w[2][ox + j].first);
        out[static_cast<ptrdiff_t>(j) * os] =
                static_cast<T>(static_cast<float>(sum[j] / static_cast<double>(count)));
    }
}

// The first maximum of each window, a NaN counting as the maximum (naive's rule).
template <class T>
void max_group(const T* in, const Strides5& ss, const std::array<std::vector<Range>, 3>& w,
               size_t oz, size_t oy, size_t ox, size_t m, T* out, ptrdiff_t os) {
    std::array<float, kGroup> best{};
    std::array<bool, kGroup> first;
    first.fill(true);
    walk_group(in, ss, w, oz, oy, ox, m, [&](size_t j, float v) {
        if (first[j] || (!std::isnan(best[j]) && (std::isnan(v) || v > best[j]))) {
            best[j] = v;
            first[j] = false;
        }
    });
    for (size_t j = 0; j < m; ++j)
        out[static_cast<ptrdiff_t>(j) * os] = static_cast<T>(best[j]);
}

template <class Op>
class AdaptiveBase : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        PoolGeometry g = adaptive_pooling_geometry(*this, this->m_param, inputs[0]);
        return uniform(g) ? pooling().get_workspace_in_bytes(inputs, outputs) : 0;
    }

protected:
    using Pooling = std::conditional_t<std::is_same_v<Op, AdaptivePoolingForward>, PoolingForward,
                                       PoolingBackward>;

    // Whether g runs as fixed-window pooling; sets that operator's params if so.
    bool uniform(const PoolGeometry& g) {
        param::Pooling p;
        if (!uniform_pooling(g, this->m_param.mode, p))
            return false;
        if (!(pooling().param() == p))
            pooling().param() = p;
        return true;
    }

    void run_pooling(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                     Workspace ws) {
        pooling().exec_unchecked(inputs, outputs, ws);
        auto* report = dynamic_cast<const KernelReport*>(&pooling());
        m_name = std::string("pooling/") + (report ? report->last_kernel() : "naive");
        this->m_last = m_name.c_str();
    }

private:
    Pooling& pooling() {
        if (!m_pooling)
            m_pooling = this->handle()->template create_operator<Pooling>();
        return *m_pooling;
    }

    std::unique_ptr<Pooling> m_pooling;
    std::string m_name;
};

class AdaptivePoolingForwardImpl final : public AdaptiveBase<AdaptivePoolingForward> {
public:
    using AdaptiveBase::AdaptiveBase;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        PoolGeometry g = adaptive_pooling_geometry(*this, m_param, src.layout);
        if (uniform(g) && !src.layout.is_empty()) {
            run_pooling(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        auto w = window_ranges(g);
        const Strides5 ss{conv_strides5(src.layout)}, ds{conv_strides5(dst.layout)};
        bool max = m_param.mode == Param::Mode::MAX;
        dispatch_float(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* d = static_cast<T*>(dst.raw_ptr());
            parallel_ranges(g.n * g.c, window_work(g), kParallelGrain, [&](size_t b, size_t e) {
                for (size_t plane = b; plane < e; ++plane) {
                    size_t n = plane / g.c, c = plane % g.c;
                    const T* in = s + ss.at(n, c, 0, 0, 0);
                    for (size_t oz = 0; oz < g.out[0]; ++oz)
                        for (size_t oy = 0; oy < g.out[1]; ++oy)
                            for (size_t ox = 0; ox < g.out[2]; ox += kGroup) {
                                T* out = d + ds.at(n, c, oz, oy, ox);
                                size_t m = std::min(kGroup, g.out[2] - ox);
                                if (max)
                                    max_group(in, ss, w, oz, oy, ox, m, out, ds.s[4]);
                                else
                                    average_group(in, ss, w, oz, oy, ox, m, out, ds.s[4]);
                            }
                }
            });
        });
    }
};

class AdaptivePoolingBackwardImpl final : public AdaptiveBase<AdaptivePoolingBackward> {
public:
    using AdaptiveBase::AdaptiveBase;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &diff = inputs[2], &grad = outputs[0];
        PoolGeometry g = adaptive_pooling_geometry(*this, m_param, src.layout);
        if (uniform(g) && !src.layout.is_empty()) {
            run_pooling(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        auto w = window_ranges(g);
        const Strides5 ss{conv_strides5(src.layout)}, ys{conv_strides5(diff.layout)},
                gs{conv_strides5(grad.layout)};
        const size_t in_h = g.in[1], in_w = g.in[2], plane_size = g.in[0] * in_h * in_w;
        bool max = m_param.mode == Param::Mode::MAX;
        dispatch_float(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            const T* dy = static_cast<const T*>(diff.raw_ptr());
            T* gr = static_cast<T*>(grad.raw_ptr());
            parallel_ranges(g.n * g.c, window_work(g), kParallelGrain, [&](size_t b, size_t e) {
                // A plane's gradient summed in double, rounded once, as naive does.
                std::vector<double> acc(plane_size);
                auto at = [&](size_t z, size_t y, size_t x) -> double& {
                    return acc[(z * in_h + y) * in_w + x];
                };
                for (size_t plane = b; plane < e; ++plane) {
                    size_t n = plane / g.c, c = plane % g.c;
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for_each_out(g, [&](const Pos3& o) {
                        double v = static_cast<float>(dy[ys.at(n, c, o[0], o[1], o[2])]);
                        if (max) {
                            Pos3 p = window_max(s, ss, n, c, w, o).second;
                            at(p[0], p[1], p[2]) += v;
                            return;
                        }
                        size_t count = (w[0][o[0]].second - w[0][o[0]].first) *
                                       (w[1][o[1]].second - w[1][o[1]].first) *
                                       (w[2][o[2]].second - w[2][o[2]].first);
                        double share = v / static_cast<double>(count);
                        walk(w, o, [&](size_t z, size_t y, size_t x) { at(z, y, x) += share; });
                    });
                    for (size_t z = 0; z < g.in[0]; ++z)
                        for (size_t y = 0; y < in_h; ++y)
                            for (size_t x = 0; x < in_w; ++x)
                                gr[gs.at(n, c, z, y, x)] =
                                        static_cast<T>(static_cast<float>(at(z, y, x)));
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(AdaptivePoolingForward, AdaptivePoolingForwardImpl);
NM_REGISTER_X86(AdaptivePoolingBackward, AdaptivePoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
