// Remap and its gradients on x86. Naive finds the point of map_xy and its taps again for every
// channel; here each image's points are computed once per call (naive/remap_point.h, naive's rule)
// and the channels reuse them (warp_sampling.h, shared with WarpPerspective), split across OpenMP
// threads: whole images where a batch shares evenly among the threads, else the forward by output
// row (channels-last) or (channel, output row), in float32 from a table of taps, the data gradient
// by (image, channel) plane, the map gradient by output row, both in double in naive's order
// (naive's bits). float32 tensors, any strides; other dtypes run naive.
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/remap_point.h"
#include "src/x86/float32_loop.h"
#include "src/x86/grad_planes.h"
#include "src/x86/warp_sampling.h"

namespace neomeg::dnn::x86 {
namespace {

using naive::remap::Point;
using Param = param::Remap;

// The point of output pixel (y, x) of map_xy[n] (naive's point_at).
struct PointOf {
    const Param& p;
    const TensorLayout& l;
    const float* m;
    size_t n;
    int64_t ih, iw;

    PointOf(const Param& param, const TensorND& map_xy, size_t image, int64_t h, int64_t w)
        : p(param),
          l(map_xy.layout),
          m(static_cast<const float*>(map_xy.raw_ptr())),
          n(image),
          ih(h),
          iw(w) {}

    Point operator()(size_t y, size_t x) const {
        const float* xy = m + static_cast<ptrdiff_t>(n) * l.stride[0] +
                          static_cast<ptrdiff_t>(y) * l.stride[1] +
                          static_cast<ptrdiff_t>(x) * l.stride[2];
        const double px = xy[0], py = xy[l.stride[3]];
        // Inside [0, len - 1) the taps are floor(v) + {0, 1}, no border rule (NaN fails): the
        // point naive's point_at gives, without its border folding (a tenth of the gradients'
        // time on the bench's remap).
        if (p.imode == Param::InterpolationMode::LINEAR && px >= 0 && py >= 0 &&
            px < static_cast<double>(iw - 1) && py < static_cast<double>(ih - 1)) {
            Point pt;
            pt.finite = true;
            pt.x = px;
            pt.y = py;
            const double x0 = std::floor(px), y0 = std::floor(py);
            pt.fx = px - x0;
            pt.fy = py - y0;
            pt.row[0] = static_cast<int64_t>(y0);
            pt.row[1] = pt.row[0] + 1;
            pt.col[0] = static_cast<int64_t>(x0);
            pt.col[1] = pt.col[0] + 1;
            return pt;
        }
        return naive::remap::point_at(p, px, py, ih, iw);
    }
};

class RemapImpl final : public Float32Loop<Remap> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &src = inputs[0], &map_xy = inputs[1], &dst = outputs[0];
        if (dst.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        const TensorLayout& ml = map_xy.layout;
        const auto* m = static_cast<const float*>(map_xy.raw_ptr());
        // Images across threads where they share evenly: one parallel region instead of three
        // an image (its channels-last copy, its table, its rows).
        parallel_items(
                dst.layout[0], dst.layout.total_nr_elems() * 8, kParallelGrain, [&](size_t n) {
                    auto xy = [&](size_t y, size_t x) {
                        return m + static_cast<ptrdiff_t>(n) * ml.stride[0] +
                               static_cast<ptrdiff_t>(y) * ml.stride[1] +
                               static_cast<ptrdiff_t>(x) * ml.stride[2];
                    };
                    warp_x86::forward_image<Point>(
                            src, n, dst, n, m_param.imode == Param::InterpolationMode::LINEAR,
                            [&](size_t y, size_t x) {
                                const float* p = xy(y, x);
                                return std::pair<double, double>{p[0], p[ml.stride[3]]};
                            },
                            [&](size_t y, size_t x) {
                                const float* p = xy(y, x);
                                return naive::remap::point_at(m_param, p[0], p[ml.stride[3]], ih,
                                                              iw);
                            },
                            m_param.border_type, m_param.scalar);
                });
    }
};

class RemapBackwardDataImpl final : public Float32Loop<RemapBackwardData> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace ws) override {
        const TensorND &map_xy = inputs[0], &diff = inputs[1], &grad = outputs[0];
        if (grad.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(grad.layout[2]);
        const auto iw = static_cast<int64_t>(grad.layout[3]);
        const size_t oh = diff.layout[2], ow = diff.layout[3];
        const Nchw dp(diff.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto taps = warp_x86::scatter_taps(
                grad.layout[0], oh, ow, iw, [&](size_t n, size_t y, size_t x) {
                    return PointOf(m_param, map_xy, n, ih, iw)(y, x);
                });
        accumulate_plane_blocks<warp_x86::kScatterPlanes, true>(
                grad, reinterpret_cast<double*>(ws.ptr), diff.layout.total_nr_elems() * 8,
                [&](size_t n, size_t c0, size_t count, double* acc) {
                    warp_x86::scatter(taps.data() + n * oh * ow, oh, ow, dy + dp.plane(n, c0),
                                      dp.s[1], count, dp, acc);
                });
    }
};

// d dst / d (x, y): the bilinear sample's slope between its taps summed over channels in order
// (naive's formula); NEAREST is piecewise constant: zero.
class RemapBackwardMatImpl final : public Float32Loop<RemapBackwardMat> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
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
        // Images across threads where they share evenly (one parallel region, not one an image).
        const size_t work = oh * ow * (channels * 8 + 16) * map_xy.layout[0];
        parallel_items(map_xy.layout[0], work, kParallelGrain, [&](size_t n) {
            std::vector<double> slopes(oh * ow * 2);
            // The points as the loop reads them, not kept.
            const PointOf point(m_param, map_xy, n, ih, iw);
            warp_x86::point_slopes([&](size_t i) { return point(i / ow, i % ow); }, oh, ow,
                                   channels, in, sp, n, dy, dp, n, m_param.scalar,
                                   [](const Point& pt) { return pt.finite && !pt.nearest; },
                                   slopes.data());
            for (size_t y = 0; y < oh; ++y)
                for (size_t x = 0; x < ow; ++x) {
                    ptrdiff_t o = static_cast<ptrdiff_t>(n) * gl.stride[0] +
                                  static_cast<ptrdiff_t>(y) * gl.stride[1] +
                                  static_cast<ptrdiff_t>(x) * gl.stride[2];
                    gr[o] = from_double<float>(slopes[(y * ow + x) * 2]);
                    gr[o + gl.stride[3]] = from_double<float>(slopes[(y * ow + x) * 2 + 1]);
                }
        });
    }
};

}  // namespace
NM_REGISTER_X86(Remap, RemapImpl);
NM_REGISTER_X86(RemapBackwardData, RemapBackwardDataImpl);
NM_REGISTER_X86(RemapBackwardMat, RemapBackwardMatImpl);
}  // namespace neomeg::dnn::x86
