// Resize and ResizeBackward on x86: the source taps of every dst row and column computed once per
// call (naive computes them per element), then (N, C) planes split across OpenMP threads. LINEAR
// takes naive's steps (the four weighted taps summed in double in naive's order, one rounding per
// element), so its results are naive's bits; NEAREST copies the element it reads (and its
// backward adds each gradient to one element), which for finite values is what naive's four taps
// with weights 1, 0, 0, 0 give. The float dtypes, any strides.
#include <algorithm>
#include <cmath>
#include <vector>

#include "src/common/dtype_dispatch.h"
#include "src/x86/from_double.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// dst position o along an axis reads (1 - w) * src[i0] + w * src[i1] (naive/resize.cpp's rule).
struct Tap {
    size_t i0, i1;
    double w;
};

std::vector<Tap> taps(const param::Resize& p, size_t in, size_t out) {
    std::vector<Tap> t(out);
    for (size_t o = 0; o < out; ++o) {
        if (p.mode == param::Resize::InterpolationMode::NEAREST) {
            size_t i = std::min(o * in / out, in - 1);
            t[o] = {i, i, 0};
            continue;
        }
        double src;
        if (p.align_corners)
            src = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) /
                                    static_cast<double>(out - 1)
                          : 0.0;
        else
            src = std::max((static_cast<double>(o) + 0.5) * static_cast<double>(in) /
                                           static_cast<double>(out) -
                                   0.5,
                           0.0);
        auto i0 = std::min(static_cast<size_t>(std::floor(src)), in - 1);
        t[o] = {i0, std::min(i0 + 1, in - 1), src - static_cast<double>(i0)};
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
        auto th = taps(m_param, src.layout[2], d[2]), tw = taps(m_param, src.layout[3], d[3]);
        const Plane sp = plane_of(src.layout), dp = plane_of(d);
        bool nearest = m_param.mode == Param::InterpolationMode::NEAREST;
        dispatch_float(d.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* o = static_cast<T*>(dst.raw_ptr());
            size_t planes = d[0] * d[1], per_plane = d[2] * d[3];
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
};

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
        auto th = taps(m_param, g[2], y[2]), tw = taps(m_param, g[3], y[3]);
        const Plane yp = plane_of(y), gp = plane_of(g);
        bool nearest = m_param.mode == Param::InterpolationMode::NEAREST;
        dispatch_float(g.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* dy = static_cast<const T*>(diff.raw_ptr());
            T* gr = static_cast<T*>(grad.raw_ptr());
            size_t planes = g[0] * g[1], in_w = g[3];
            size_t work = planes * (g[2] * g[3] + y[2] * y[3] * 4);
            parallel_ranges(planes, work, kParallelGrain, [&](size_t b, size_t e) {
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
};

}  // namespace
NM_REGISTER_X86(Resize, ResizeImpl);
NM_REGISTER_X86(ResizeBackward, ResizeBackwardImpl);
}  // namespace neomeg::dnn::x86
