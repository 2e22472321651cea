// Remap and its gradients on x86. Naive finds the point of map_xy and its taps again for every
// channel; here each image's points are computed once per call (naive/remap_point.h, naive's
// rule) and the channels reuse them, split across OpenMP threads: the forward by (channel, output
// row), the data gradient by (image, channel) plane, the map gradient by output row. Values are
// summed in double in naive's order (a point's taps; the data gradient's contributions in output
// order per plane; the map gradient's channels in order), so results are naive's bits. The taps
// are scattered reads folded by the border mode, which is why the loops are scalar. float32
// tensors, any strides; other dtypes run naive.
#include <algorithm>
#include <limits>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/remap_point.h"
#include "src/x86/from_double.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

using naive::remap::Point;
using roi_x86::Nchw;
using Param = param::Remap;

// map_xy[n]'s points, row-major over (OH, OW), computed across threads.
std::vector<Point> points_of(const Param& p, const TensorND& map_xy, size_t n, int64_t ih,
                             int64_t iw) {
    const TensorLayout& l = map_xy.layout;
    const auto* m = static_cast<const float*>(map_xy.raw_ptr());
    const size_t oh = l[1], ow = l[2];
    std::vector<Point> pts(oh * ow);
    parallel_ranges(oh, oh * ow * 16, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t y = b; y < e; ++y)
            for (size_t x = 0; x < ow; ++x) {
                const float* xy = m + static_cast<ptrdiff_t>(n) * l.stride[0] +
                                  static_cast<ptrdiff_t>(y) * l.stride[1] +
                                  static_cast<ptrdiff_t>(x) * l.stride[2];
                pts[y * ow + x] = naive::remap::point_at(p, xy[0], xy[l.stride[3]], ih, iw);
            }
    });
    return pts;
}

double tap_value(const Param& p, const float* plane, const Nchw& sp, const Point& pt, int i,
                 int j) {
    if (pt.row[i] < 0 || pt.col[j] < 0)
        return p.scalar;
    return plane[sp.at(pt.row[i], pt.col[j])];
}

bool float32_call(std::span<const TensorND> in, std::span<const TensorND> out) {
    return roi_x86::all_float32(in, out);
}

class RemapImpl final : public LoopKernel<Remap> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!float32_call(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &src = inputs[0], &map_xy = inputs[1], &dst = outputs[0];
        if (dst.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        const size_t channels = dst.layout[1], oh = dst.layout[2], ow = dst.layout[3];
        const Nchw sp(src.layout), dp(dst.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        auto* out = static_cast<float*>(dst.raw_ptr());
        const double outside = m_param.border_type == Param::BorderMode::CONSTANT
                                       ? static_cast<double>(m_param.scalar)
                                       : std::numeric_limits<double>::quiet_NaN();
        for (size_t n = 0; n < dst.layout[0]; ++n) {
            const auto pts = points_of(m_param, map_xy, n, ih, iw);
            parallel_ranges(
                    channels * oh, channels * oh * ow * 8, kParallelGrain, [&](size_t b, size_t e) {
                        for (size_t u = b; u < e; ++u) {
                            size_t c = u / oh, y = u % oh;
                            const float* plane = in + sp.plane(n, c);
                            float* row = out + dp.plane(n, c) + dp.at(static_cast<int64_t>(y), 0);
                            for (size_t x = 0; x < ow; ++x) {
                                const Point& pt = pts[y * ow + x];
                                double v = outside;
                                if (pt.finite) {
                                    v = 0;
                                    for (int i = 0; i < pt.taps(); ++i)
                                        for (int j = 0; j < pt.taps(); ++j)
                                            v += pt.weight(i, j) *
                                                 tap_value(m_param, plane, sp, pt, i, j);
                                }
                                row[static_cast<ptrdiff_t>(x) * dp.s[3]] = from_double<float>(v);
                            }
                        }
                    });
        }
    }
};

// Each (image, channel) plane of grad sums, in double in the workspace, its diff's contributions
// in output order, then is rounded once.
class RemapBackwardDataImpl final : public LoopKernel<RemapBackwardData> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!float32_call(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &map_xy = inputs[0], &diff = inputs[1], &grad = outputs[0];
        if (grad.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(grad.layout[2]);
        const auto iw = static_cast<int64_t>(grad.layout[3]);
        const size_t channels = grad.layout[1], oh = diff.layout[2], ow = diff.layout[3];
        const Nchw dp(diff.layout), gp(grad.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        const auto plane_n = static_cast<size_t>(ih * iw);
        auto* acc_all = reinterpret_cast<double*>(ws.ptr);
        for (size_t n = 0; n < grad.layout[0]; ++n) {
            const auto pts = points_of(m_param, map_xy, n, ih, iw);
            parallel_ranges(
                    channels, channels * (oh * ow * 8 + plane_n), kParallelGrain,
                    [&](size_t b, size_t e) {
                        for (size_t c = b; c < e; ++c) {
                            double* acc = acc_all + (n * channels + c) * plane_n;
                            std::fill(acc, acc + plane_n, 0.0);
                            const float* d = dy + dp.plane(n, c);
                            for (size_t y = 0; y < oh; ++y)
                                for (size_t x = 0; x < ow; ++x) {
                                    const Point& pt = pts[y * ow + x];
                                    if (!pt.finite)
                                        continue;
                                    double g = d[dp.at(static_cast<int64_t>(y),
                                                       static_cast<int64_t>(x))];
                                    for (int i = 0; i < pt.taps(); ++i)
                                        for (int j = 0; j < pt.taps(); ++j) {
                                            if (pt.row[i] < 0 || pt.col[j] < 0)
                                                continue;
                                            acc[pt.row[i] * iw + pt.col[j]] += pt.weight(i, j) * g;
                                        }
                                }
                            float* plane = gr + gp.plane(n, c);
                            for (int64_t y = 0; y < ih; ++y)
                                for (int64_t x = 0; x < iw; ++x)
                                    plane[gp.at(y, x)] = from_double<float>(acc[y * iw + x]);
                        }
                    });
        }
    }
};

// d dst / d (x, y): the bilinear sample's slope between its taps summed over channels in order
// (naive's formula); NEAREST is piecewise constant: zero.
class RemapBackwardMatImpl final : public LoopKernel<RemapBackwardMat> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!float32_call(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &src = inputs[0], &map_xy = inputs[1], &diff = inputs[2];
        const TensorND& grad = outputs[0];
        if (grad.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        const size_t channels = diff.layout[1], oh = map_xy.layout[1], ow = map_xy.layout[2];
        const Nchw sp(src.layout), dp(diff.layout);
        const TensorLayout& gl = grad.layout;
        const auto* in = static_cast<const float*>(src.raw_ptr());
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        const size_t rows = map_xy.layout[0] * oh;
        parallel_ranges(
                rows, rows * ow * (channels * 16 + 16), kParallelGrain, [&](size_t b, size_t e) {
                    for (size_t u = b; u < e; ++u) {
                        size_t n = u / oh, y = u % oh;
                        const TensorLayout& ml = map_xy.layout;
                        const auto* m = static_cast<const float*>(map_xy.raw_ptr());
                        for (size_t x = 0; x < ow; ++x) {
                            const float* xy = m + static_cast<ptrdiff_t>(n) * ml.stride[0] +
                                              static_cast<ptrdiff_t>(y) * ml.stride[1] +
                                              static_cast<ptrdiff_t>(x) * ml.stride[2];
                            Point pt = naive::remap::point_at(m_param, xy[0], xy[ml.stride[3]], ih,
                                                              iw);
                            double gx = 0, gy = 0;
                            auto yy = static_cast<int64_t>(y), xx = static_cast<int64_t>(x);
                            if (pt.finite && !pt.nearest)
                                for (size_t c = 0; c < channels; ++c) {
                                    const float* plane = in + sp.plane(n, c);
                                    double g = dy[dp.plane(n, c) + dp.at(yy, xx)];
                                    double v[2][2];
                                    for (int i = 0; i < 2; ++i)
                                        for (int j = 0; j < 2; ++j)
                                            v[i][j] = tap_value(m_param, plane, sp, pt, i, j);
                                    gx += g * ((1 - pt.fy) * (v[0][1] - v[0][0]) +
                                               pt.fy * (v[1][1] - v[1][0]));
                                    gy += g * ((1 - pt.fx) * (v[1][0] - v[0][0]) +
                                               pt.fx * (v[1][1] - v[0][1]));
                                }
                            ptrdiff_t o = static_cast<ptrdiff_t>(n) * gl.stride[0] +
                                          yy * gl.stride[1] + xx * gl.stride[2];
                            gr[o] = from_double<float>(gx);
                            gr[o + gl.stride[3]] = from_double<float>(gy);
                        }
                    }
                });
    }
};

}  // namespace
NM_REGISTER_X86(Remap, RemapImpl);
NM_REGISTER_X86(RemapBackwardData, RemapBackwardDataImpl);
NM_REGISTER_X86(RemapBackwardMat, RemapBackwardMatImpl);
}  // namespace neomeg::dnn::x86
