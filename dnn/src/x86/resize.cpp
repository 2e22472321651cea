// Resize and ResizeBackward on x86: the source taps of every dst row and column computed once per
// call (naive computes them per element; the rule is common/resize_taps.h), then (N, C) planes
// split across OpenMP threads. LINEAR and CUBIC take naive's steps (the weighted taps summed in
// double in naive's order, one rounding per element), so their results are naive's bits; NEAREST
// copies the element it reads (and its backward adds each gradient to one element), as naive's
// single tap of weight 1. The float dtypes, any strides; NEAREST and LINEAR float32 in vectors
// (resize_hwy.h) where the offsets fit 32 bits (and, forward, dst's rows are dense).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/resize_taps.h"
#include "src/x86/from_double.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/resize_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

std::vector<resize::AxisTaps> axis_taps(const param::Resize& p, size_t in, size_t out) {
    std::vector<resize::AxisTaps> t(out);
    for (size_t o = 0; o < out; ++o)
        t[o] = resize::axis_taps(static_cast<resize::Mode>(p.mode), p.align_corners,
                                 static_cast<int64_t>(in), static_cast<int64_t>(out),
                                 static_cast<int64_t>(o));
    return t;
}

// NEAREST's and LINEAR's taps as the two-tap form of the vector loops: dst position o reads
// (1 - w) * src[i0] + w * src[i1] (NEAREST: i0 == i1, w == 0).
struct Tap {
    size_t i0, i1;
    double w;
};

std::vector<Tap> taps(const param::Resize& p, size_t in, size_t out) {
    std::vector<Tap> t;
    for (const resize::AxisTaps& a : axis_taps(p, in, out)) {
        auto i0 = static_cast<size_t>(a.idx[0]);
        t.push_back(a.n == 1 ? Tap{i0, i0, 0} : Tap{i0, static_cast<size_t>(a.idx[1]), a.w[1]});
    }
    return t;
}

struct Plane {
    std::array<ptrdiff_t, 4> s;
    ptrdiff_t at(size_t n, size_t c, size_t h, size_t w) const {
        return static_cast<ptrdiff_t>(n) * s[0] + static_cast<ptrdiff_t>(c) * s[1] +
               static_cast<ptrdiff_t>(h) * s[2] + static_cast<ptrdiff_t>(w) * s[3];
    }
};

Plane plane_of(const TensorLayout& l) {
    return {{l.stride[0], l.stride[1], l.stride[2], l.stride[3]}};
}

bool fits_i32(ptrdiff_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// An axis's taps for the vector loops: i0 and i1 scaled by `stride` (offsets), weights apart;
// empty where an offset does not fit 32 bits.
struct VecTaps {
    std::vector<int32_t> i0, i1;
    std::vector<double> w;
};

VecTaps vec_taps(const std::vector<Tap>& t, ptrdiff_t stride) {
    VecTaps v;
    for (const Tap& k : t) {
        ptrdiff_t a = static_cast<ptrdiff_t>(k.i0) * stride,
                  b = static_cast<ptrdiff_t>(k.i1) * stride;
        if (!fits_i32(a) || !fits_i32(b))
            return {};
        v.i0.push_back(static_cast<int32_t>(a));
        v.i1.push_back(static_cast<int32_t>(b));
        v.w.push_back(k.w);
    }
    return v;
}

// Offsets of planes first .. first + count - 1 from the first (N-major, C-minor), or empty where
// one does not fit 32 bits.
std::vector<int32_t> plane_offsets(const Plane& p, size_t channels, size_t first, size_t count) {
    std::vector<int32_t> o;
    const ptrdiff_t base = p.at(first / channels, first % channels, 0, 0);
    for (size_t i = first; i < first + count; ++i) {
        ptrdiff_t d = p.at(i / channels, i % channels, 0, 0) - base;
        if (!fits_i32(d))
            return {};
        o.push_back(static_cast<int32_t>(d));
    }
    return o;
}

class ResizeImpl final : public LoopKernel<Resize> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const TensorLayout& d = dst.layout;
        m_last = "loop";
        if (d.is_empty())
            return;
        if (m_param.mode == Param::InterpolationMode::CUBIC) {
            cubic(src, dst);
            return;
        }
        auto th = taps(m_param, src.layout[2], d[2]), tw = taps(m_param, src.layout[3], d[3]);
        const Plane sp = plane_of(src.layout), dp = plane_of(d);
        bool nearest = m_param.mode == Param::InterpolationMode::NEAREST;
        dispatch_float(d.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* o = static_cast<T*>(dst.raw_ptr());
            size_t planes = d[0] * d[1], per_plane = d[2] * d[3];
            if constexpr (std::is_same_v<T, float>) {
                VecTaps vw = vec_taps(tw, sp.s[3]);
                if (dp.s[3] == 1 && !vw.w.empty()) {
                    parallel_ranges(planes, planes * per_plane * 4, kParallelGrain,
                                    [&](size_t b, size_t e) {
                                        for (size_t pl = b; pl < e; ++pl) {
                                            size_t n = pl / d[1], c = pl % d[1];
                                            for (size_t y = 0; y < d[2]; ++y)
                                                resize_row(s + sp.at(n, c, th[y].i0, 0),
                                                           s + sp.at(n, c, th[y].i1, 0), th[y].w,
                                                           vw.i0.data(), vw.i1.data(), vw.w.data(),
                                                           nearest, o + dp.at(n, c, y, 0), d[3]);
                                        }
                                    });
                    return;
                }
            }
            parallel_ranges(
                    planes, planes * per_plane * 4, kParallelGrain, [&](size_t b, size_t e) {
                        for (size_t pl = b; pl < e; ++pl) {
                            size_t n = pl / d[1], c = pl % d[1];
                            for (size_t y = 0; y < d[2]; ++y) {
                                const Tap& h = th[y];
                                T* row = o + dp.at(n, c, y, 0);
                                if (nearest) {
                                    const T* in = s + sp.at(n, c, h.i0, 0);
                                    for (size_t x = 0; x < d[3]; ++x)
                                        row[static_cast<ptrdiff_t>(x) * dp.s[3]] =
                                                in[static_cast<ptrdiff_t>(tw[x].i0) * sp.s[3]];
                                    continue;
                                }
                                const T* r0 = s + sp.at(n, c, h.i0, 0);
                                const T* r1 = s + sp.at(n, c, h.i1, 0);
                                for (size_t x = 0; x < d[3]; ++x) {
                                    const Tap& w = tw[x];
                                    auto at = [&](const T* r, size_t i) {
                                        return static_cast<double>(static_cast<float>(
                                                r[static_cast<ptrdiff_t>(i) * sp.s[3]]));
                                    };
                                    double acc = 0;
                                    acc += (1 - h.w) * (1 - w.w) * at(r0, w.i0);
                                    acc += (1 - h.w) * w.w * at(r0, w.i1);
                                    acc += h.w * (1 - w.w) * at(r1, w.i0);
                                    acc += h.w * w.w * at(r1, w.i1);
                                    row[static_cast<ptrdiff_t>(x) * dp.s[3]] = from_double<T>(acc);
                                }
                            }
                        }
                    });
        });
    }

private:
    // Each dst element the sum of its 4 x 4 weighted taps in naive's order, in double.
    void cubic(const TensorND& src, const TensorND& dst) {
        const TensorLayout& d = dst.layout;
        auto th = axis_taps(m_param, src.layout[2], d[2]),
             tw = axis_taps(m_param, src.layout[3], d[3]);
        const Plane sp = plane_of(src.layout), dp = plane_of(d);
        dispatch_float(d.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* o = static_cast<T*>(dst.raw_ptr());
            size_t planes = d[0] * d[1];
            parallel_ranges(
                    planes, planes * d[2] * d[3] * 16, kParallelGrain, [&](size_t b, size_t e) {
                        for (size_t pl = b; pl < e; ++pl) {
                            size_t n = pl / d[1], c = pl % d[1];
                            for (size_t y = 0; y < d[2]; ++y) {
                                const resize::AxisTaps& h = th[y];
                                for (size_t x = 0; x < d[3]; ++x) {
                                    const resize::AxisTaps& w = tw[x];
                                    double acc = 0;
                                    for (int i = 0; i < h.n; ++i) {
                                        const T* row =
                                                s + sp.at(n, c, static_cast<size_t>(h.idx[i]), 0);
                                        for (int j = 0; j < w.n; ++j)
                                            acc += h.w[i] * w.w[j] *
                                                   static_cast<double>(static_cast<float>(
                                                           row[w.idx[j] * sp.s[3]]));
                                    }
                                    o[dp.at(n, c, y, x)] = from_double<T>(acc);
                                }
                            }
                        }
                    });
        });
    }
};

// The backward of float32 planes in groups of resize_backward_lanes(), one plane per lane, from
// plane 0; returns how many planes it did (the rest: the scalar loop).
size_t backward_groups(const float* dy, float* gr, const std::vector<Tap>& th,
                       const std::vector<Tap>& tw, bool nearest, const TensorLayout& y,
                       const TensorLayout& g, const Plane& yp, const Plane& gp) {
    const size_t lanes = resize_backward_lanes(), planes = g[0] * g[1];
    const size_t groups = planes / lanes;
    if (groups == 0)
        return 0;
    // Each group's plane offsets from its first plane (any strides of N and C).
    VecTaps vh = vec_taps(th, 1), vw = vec_taps(tw, 1);
    std::vector<std::vector<int32_t>> dy_off(groups), g_off(groups);
    for (size_t i = 0; i < groups; ++i) {
        dy_off[i] = plane_offsets(yp, g[1], i * lanes, lanes);
        g_off[i] = plane_offsets(gp, g[1], i * lanes, lanes);
        if (dy_off[i].empty() || g_off[i].empty())
            return 0;
    }
    ResizeAxisTaps ht{vh.i0.data(), vh.i1.data(), vh.w.data()};
    ResizeAxisTaps wt{vw.i0.data(), vw.i1.data(), vw.w.data()};
    size_t work = groups * lanes * (g[2] * g[3] + y[2] * y[3] * 4);
    parallel_ranges(groups, work, kParallelGrain, [&](size_t b, size_t e) {
        std::vector<double> acc(g[2] * g[3] * lanes);
        for (size_t i = b; i < e; ++i) {
            size_t pl = i * lanes, n = pl / g[1], c = pl % g[1];
            resize_backward_planes(dy + yp.at(n, c, 0, 0), dy_off[i].data(), yp.s[2], yp.s[3], y[2],
                                   y[3], ht, wt, nearest, acc.data(), gr + gp.at(n, c, 0, 0),
                                   g_off[i].data(), gp.s[2], gp.s[3], g[2], g[3]);
        }
    });
    return groups * lanes;
}

// Each diff element added onto its taps in double, plane by plane in naive's order, rounded once.
class ResizeBackwardImpl final : public LoopKernel<ResizeBackward> {
public:
    using LoopKernel::LoopKernel;

    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout>) override {
        return 0;
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &diff = inputs[0], &grad = outputs[0];
        const TensorLayout &y = diff.layout, &g = grad.layout;
        m_last = "loop";
        if (g.is_empty())
            return;
        if (m_param.mode == Param::InterpolationMode::CUBIC) {
            cubic(diff, grad);
            return;
        }
        auto th = taps(m_param, g[2], y[2]), tw = taps(m_param, g[3], y[3]);
        const Plane yp = plane_of(y), gp = plane_of(g);
        bool nearest = m_param.mode == Param::InterpolationMode::NEAREST;
        dispatch_float(g.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* dy = static_cast<const T*>(diff.raw_ptr());
            T* gr = static_cast<T*>(grad.raw_ptr());
            size_t planes = g[0] * g[1], in_w = g[3];
            size_t work = planes * (g[2] * g[3] + y[2] * y[3] * 4);
            // float32 planes in groups of the vector's lanes, one plane per lane; the rest below.
            size_t first = 0;
            if constexpr (std::is_same_v<T, float>)
                first = backward_groups(dy, gr, th, tw, nearest, y, g, yp, gp);
            parallel_ranges(planes - first, work, kParallelGrain, [&](size_t b, size_t e) {
                b += first;
                e += first;
                std::vector<double> acc(g[2] * in_w);
                for (size_t pl = b; pl < e; ++pl) {
                    size_t n = pl / g[1], c = pl % g[1];
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for (size_t oy = 0; oy < y[2]; ++oy) {
                        const Tap& h = th[oy];
                        double* a0 = acc.data() + h.i0 * in_w;
                        double* a1 = acc.data() + h.i1 * in_w;
                        const T* row = dy + yp.at(n, c, oy, 0);
                        for (size_t ox = 0; ox < y[3]; ++ox) {
                            const Tap& w = tw[ox];
                            double v =
                                    static_cast<float>(row[static_cast<ptrdiff_t>(ox) * yp.s[3]]);
                            if (nearest) {
                                a0[w.i0] += v;
                                continue;
                            }
                            a0[w.i0] += (1 - h.w) * (1 - w.w) * v;
                            a0[w.i1] += (1 - h.w) * w.w * v;
                            a1[w.i0] += h.w * (1 - w.w) * v;
                            a1[w.i1] += h.w * w.w * v;
                        }
                    }
                    for (size_t iy = 0; iy < g[2]; ++iy) {
                        T* out = gr + gp.at(n, c, iy, 0);
                        for (size_t ix = 0; ix < in_w; ++ix)
                            out[static_cast<ptrdiff_t>(ix) * gp.s[3]] =
                                    from_double<T>(acc[iy * in_w + ix]);
                    }
                }
            });
        });
    }

private:
    // Each diff element added onto its 4 x 4 taps in double, plane by plane in naive's order.
    void cubic(const TensorND& diff, const TensorND& grad) {
        const TensorLayout &y = diff.layout, &g = grad.layout;
        auto th = axis_taps(m_param, g[2], y[2]), tw = axis_taps(m_param, g[3], y[3]);
        const Plane yp = plane_of(y), gp = plane_of(g);
        dispatch_float(g.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* dy = static_cast<const T*>(diff.raw_ptr());
            T* gr = static_cast<T*>(grad.raw_ptr());
            size_t planes = g[0] * g[1], in_w = g[3];
            size_t work = planes * (g[2] * g[3] + y[2] * y[3] * 16);
            parallel_ranges(planes, work, kParallelGrain, [&](size_t b, size_t e) {
                std::vector<double> acc(g[2] * in_w);
                for (size_t pl = b; pl < e; ++pl) {
                    size_t n = pl / g[1], c = pl % g[1];
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for (size_t oy = 0; oy < y[2]; ++oy) {
                        const resize::AxisTaps& h = th[oy];
                        for (size_t ox = 0; ox < y[3]; ++ox) {
                            const resize::AxisTaps& w = tw[ox];
                            double v = static_cast<float>(dy[yp.at(n, c, oy, ox)]);
                            for (int i = 0; i < h.n; ++i) {
                                double* a = acc.data() + static_cast<size_t>(h.idx[i]) * in_w;
                                for (int j = 0; j < w.n; ++j)
                                    a[w.idx[j]] += h.w[i] * w.w[j] * v;
                            }
                        }
                    }
                    for (size_t iy = 0; iy < g[2]; ++iy)
                        for (size_t ix = 0; ix < in_w; ++ix)
                            gr[gp.at(n, c, iy, ix)] = from_double<T>(acc[iy * in_w + ix]);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(Resize, ResizeImpl);
NM_REGISTER_X86(ResizeBackward, ResizeBackwardImpl);
}  // namespace neomeg::dnn::x86
