// Naive PoolingForward/PoolingBackward and AdaptivePoolingForward/AdaptivePoolingBackward: one
// window walk serves both, only the window bounds differ (PoolGeometry::range). The backward
// kernels scatter each output's gradient over its window, so overlapping windows accumulate; they
// sum in a double workspace of src's size and round once when writing grad.
#include <algorithm>
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/pooling.h"
#include "src/naive/convolution.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

using Pos3 = std::array<size_t, kMaxPoolSpatial>;

enum class Reduce { Max, Average, AverageExcludePadding };

Reduce reduce_of(param::Pooling::Mode m) {
    switch (m) {
        case param::Pooling::Mode::MAX:
            return Reduce::Max;
        case param::Pooling::Mode::AVERAGE:
            return Reduce::Average;
        case param::Pooling::Mode::AVERAGE_COUNT_EXCLUDE_PADDING:
            break;
    }
    return Reduce::AverageExcludePadding;
}

// Adaptive windows never reach into padding, so their average is over the elements they hold.
Reduce reduce_of(param::AdaptivePooling::Mode m) {
    return m == param::AdaptivePooling::Mode::MAX ? Reduce::Max : Reduce::AverageExcludePadding;
}

// Calls f(i) for every input position of output o's window that lies inside the input, in
// row-major order; returns how many there were.
template <class F>
size_t walk_window(const PoolGeometry& g, const Pos3& o, F&& f) {
    Pos3 lo{}, extent{};
    for (size_t d = 0; d < kMaxPoolSpatial; ++d) {
        auto [first, last] = g.range(d, o[d]);
        first = std::max<ptrdiff_t>(first, 0);
        last = std::min<ptrdiff_t>(last, static_cast<ptrdiff_t>(g.in[d]));
        lo[d] = static_cast<size_t>(first);
        extent[d] = static_cast<size_t>(std::max<ptrdiff_t>(last - first, 0));
    }
    for_each_pos3(extent, [&](const Pos3& p) {
        f(Pos3{lo[0] + p[0], lo[1] + p[1], lo[2] + p[2]});
    });
    return extent[0] * extent[1] * extent[2];
}

// The first maximum of output (n, c, o)'s window; a NaN counts as the maximum, so it propagates.
template <class T>
std::pair<double, Pos3> window_max(const PoolGeometry& g, const TensorND& src,
                                   const std::array<ptrdiff_t, 5>& ss, size_t n, size_t c,
                                   const Pos3& o) {
    double best = -std::numeric_limits<double>::infinity();
    Pos3 at{};
    bool first = true;
    walk_window(g, o, [&](const Pos3& i) {
        double v = load_as_double<T>(src, offset5(ss, n, c, i));
        if (first || (!std::isnan(best) && (std::isnan(v) || v > best))) {
            best = v;
            at = i;
            first = false;
        }
    });
    return {best, at};
}

void pool_forward(const OperatorBase& op, const PoolGeometry& g, Reduce r, const TensorND& src,
                  const TensorND& dst) {
    const auto ss = conv_strides5(src.layout), ds = conv_strides5(dst.layout);
    // Each output: the window's maximum, or average(sum of the window, elements it holds).
    auto run = [&](auto tag, auto average) {
        using T = typename decltype(tag)::type;
        for (size_t n = 0; n < g.n; ++n)
            for (size_t c = 0; c < g.c; ++c)
                for_each_pos3(g.out, [&](const Pos3& o) {
                    double v;
                    if (r == Reduce::Max) {
                        v = window_max<T>(g, src, ss, n, c, o).first;
                    } else {
                        double sum = 0;
                        size_t count = walk_window(g, o, [&](const Pos3& i) {
                            sum += load_as_double<T>(src, offset5(ss, n, c, i));
                        });
                        v = average(sum, count);
                    }
                    store_from_double<T>(dst, offset5(ds, n, c, o), v);
                });
    };
    if (src.layout.dtype.is_quantized()) {
        // On the stored integers, as MegEngine: the maximum, or the window's sum divided by its
        // size (AVERAGE: padding counts as the zero point, the value 0) or by the elements it
        // holds, rounded half away from zero (exact in double: the sums are small integers).
        const double zero_point = src.layout.dtype.zero_point();
        dispatch_dtype(src.layout.dtype.storage(), [&](auto tag) {
            run(tag, [&](double sum, size_t count) {
                size_t size = r == Reduce::Average ? g.window_size() : count;
                sum += zero_point * static_cast<double>(size - count);
                return std::round(sum / static_cast<double>(size));
            });
        });
        return;
    }
    dispatch_float(src.layout.dtype, op.param_str(), [&](auto tag) {
        run(tag, [&](double sum, size_t count) {
            return sum / static_cast<double>(r == Reduce::Average ? g.window_size() : count);
        });
    });
}

size_t pool_backward_workspace(const TensorLayout& src) {
    return src.total_nr_elems() * sizeof(double);
}

void pool_backward(const OperatorBase& op, const PoolGeometry& g, Reduce r, const TensorND& src,
                   const TensorND& diff, const TensorND& grad, Workspace ws) {
    // acc is grad's contiguous double image, indexed like an (N, C, D, H, W) tensor.
    auto* acc = reinterpret_cast<double*>(ws.ptr);
    const size_t total = src.layout.total_nr_elems();
    std::fill(acc, acc + total, 0.0);
    const std::array<ptrdiff_t, 5> as{static_cast<ptrdiff_t>(g.c * g.in[0] * g.in[1] * g.in[2]),
                                      static_cast<ptrdiff_t>(g.in[0] * g.in[1] * g.in[2]),
                                      static_cast<ptrdiff_t>(g.in[1] * g.in[2]),
                                      static_cast<ptrdiff_t>(g.in[2]), 1};
    const auto ss = conv_strides5(src.layout), ys = conv_strides5(diff.layout),
               gs = conv_strides5(grad.layout);
    dispatch_float(src.layout.dtype, op.param_str(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (size_t n = 0; n < g.n; ++n)
            for (size_t c = 0; c < g.c; ++c)
                for_each_pos3(g.out, [&](const Pos3& o) {
                    double dy = load_as_double<T>(diff, offset5(ys, n, c, o));
                    if (r == Reduce::Max) {
                        acc[offset5(as, n, c, window_max<T>(g, src, ss, n, c, o).second)] += dy;
                        return;
                    }
                    size_t count = walk_window(g, o, [](const Pos3&) {});
                    double share = dy / static_cast<double>(r == Reduce::Average ? g.window_size()
                                                                                 : count);
                    walk_window(g, o, [&](const Pos3& i) { acc[offset5(as, n, c, i)] += share; });
                });
        for (size_t n = 0; n < g.n; ++n)
            for (size_t c = 0; c < g.c; ++c)
                for_each_pos3(g.in, [&](const Pos3& i) {
                    store_from_double<T>(grad, offset5(gs, n, c, i), acc[offset5(as, n, c, i)]);
                });
    });
}

class PoolingForwardImpl final : public PoolingForward {
public:
    using PoolingForward::PoolingForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        pool_forward(*this, pooling_geometry(*this, m_param, in[0].layout), reduce_of(m_param.mode),
                     in[0], out[0]);
    }
};

class PoolingBackwardImpl final : public PoolingBackward {
public:
    using PoolingBackward::PoolingBackward;
    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout>) override {
        return pool_backward_workspace(in[0]);
    }
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        pool_backward(*this, pooling_geometry(*this, m_param, in[0].layout),
                      reduce_of(m_param.mode), in[0], in[2], out[0], ws);
    }
};

class AdaptivePoolingForwardImpl final : public AdaptivePoolingForward {
public:
    using AdaptivePoolingForward::AdaptivePoolingForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        pool_forward(*this, adaptive_pooling_geometry(*this, m_param, in[0].layout),
                     reduce_of(m_param.mode), in[0], out[0]);
    }
};

class AdaptivePoolingBackwardImpl final : public AdaptivePoolingBackward {
public:
    using AdaptivePoolingBackward::AdaptivePoolingBackward;
    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout>) override {
        return pool_backward_workspace(in[0]);
    }
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        pool_backward(*this, adaptive_pooling_geometry(*this, m_param, in[0].layout),
                      reduce_of(m_param.mode), in[0], in[2], out[0], ws);
    }
};

}  // namespace
NM_REGISTER_NAIVE(PoolingForward, PoolingForwardImpl);
NM_REGISTER_NAIVE(PoolingBackward, PoolingBackwardImpl);
NM_REGISTER_NAIVE(AdaptivePoolingForward, AdaptivePoolingForwardImpl);
NM_REGISTER_NAIVE(AdaptivePoolingBackward, AdaptivePoolingBackwardImpl);
}  // namespace neomeg::dnn::naive
