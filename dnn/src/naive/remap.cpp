// Remap and its gradients, in double. Output pixel (n, h, w) reads src[n] at the point
// (x, y) = map_xy[n, h, w] (remap_point.h: bilinear or nearest taps, folded by the border mode).
#include <algorithm>
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/remap_point.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using Param = param::Remap;
using BorderMode = Param::BorderMode;

using remap::Point;

Point point_of(const Param& p, const TensorND& map_xy, size_t n, size_t h, size_t w, int64_t ih,
               int64_t iw) {
    size_t xi[4] = {n, h, w, 0}, yi[4] = {n, h, w, 1};
    double x = load_scalar(map_xy, offset_of(map_xy.layout, xi)).f;
    double y = load_scalar(map_xy, offset_of(map_xy.layout, yi)).f;
    return remap::point_at(p, x, y, ih, iw);
}

double tap_value(const Param& p, const TensorND& src, size_t n, size_t c, const Point& pt, int i,
                 int j) {
    if (pt.row[i] < 0 || pt.col[j] < 0)
        return p.scalar;
    size_t idx[4] = {n, c, static_cast<size_t>(pt.row[i]), static_cast<size_t>(pt.col[j])};
    return load_scalar(src, offset_of(src.layout, idx)).f;
}

class RemapImpl final : public Remap {
public:
    using Remap::Remap;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &map_xy = inputs[1], &dst = outputs[0];
        auto ih = static_cast<int64_t>(src.layout.shape[2]);
        auto iw = static_cast<int64_t>(src.layout.shape[3]);
        for_each_index(dst.layout, [&](const auto& idx) {
            Point pt = point_of(m_param, map_xy, idx[0], idx[2], idx[3], ih, iw);
            double v;
            if (!pt.finite)
                v = m_param.border_type == BorderMode::CONSTANT
                            ? m_param.scalar
                            : std::numeric_limits<double>::quiet_NaN();
            else {
                v = 0;
                for (int i = 0; i < pt.taps(); ++i)
                    for (int j = 0; j < pt.taps(); ++j)
                        v += pt.weight(i, j) * tap_value(m_param, src, idx[0], idx[1], pt, i, j);
            }
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(v));
        });
    }
};

// Scatters each diff element onto the in-image taps, summing in double in the workspace.
class RemapBackwardDataImpl final : public RemapBackwardData {
public:
    using RemapBackwardData::RemapBackwardData;
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout> outputs) override {
        return outputs[0].total_nr_elems() * sizeof(double);
    }
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) override {
        const TensorND &map_xy = inputs[0], &diff = inputs[1], &grad = outputs[0];
        TensorLayout acc_layout(grad.layout, grad.layout.dtype);  // contiguous index of grad
        auto* acc = reinterpret_cast<double*>(workspace.ptr);
        std::fill(acc, acc + grad.layout.total_nr_elems(), 0.0);
        auto ih = static_cast<int64_t>(grad.layout.shape[2]);
        auto iw = static_cast<int64_t>(grad.layout.shape[3]);
        for_each_index(diff.layout, [&](const auto& idx) {
            Point pt = point_of(m_param, map_xy, idx[0], idx[2], idx[3], ih, iw);
            if (!pt.finite)
                return;
            double g = load_scalar(diff, offset_of(diff.layout, idx.data())).f;
            for (int i = 0; i < pt.taps(); ++i)
                for (int j = 0; j < pt.taps(); ++j) {
                    if (pt.row[i] < 0 || pt.col[j] < 0)
                        continue;
                    size_t gi[4] = {idx[0], idx[1], static_cast<size_t>(pt.row[i]),
                                    static_cast<size_t>(pt.col[j])};
                    acc[offset_of(acc_layout, gi)] += pt.weight(i, j) * g;
                }
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

// d dst / d (x, y) is the bilinear sample's slope between its taps (the right derivative where
// x or y is an integer), summed over channels; NEAREST is piecewise constant: zero.
class RemapBackwardMatImpl final : public RemapBackwardMat {
public:
    using RemapBackwardMat::RemapBackwardMat;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &map_xy = inputs[1], &diff = inputs[2], &grad = outputs[0];
        auto ih = static_cast<int64_t>(src.layout.shape[2]);
        auto iw = static_cast<int64_t>(src.layout.shape[3]);
        size_t channels = diff.layout.shape[1];
        for (size_t n = 0; n < map_xy.layout.shape[0]; ++n)
            for (size_t oh = 0; oh < map_xy.layout.shape[1]; ++oh)
                for (size_t ow = 0; ow < map_xy.layout.shape[2]; ++ow) {
                    Point pt = point_of(m_param, map_xy, n, oh, ow, ih, iw);
                    double gx = 0, gy = 0;
                    if (pt.finite && !pt.nearest)
                        for (size_t c = 0; c < channels; ++c) {
                            size_t di[4] = {n, c, oh, ow};
                            double g = load_scalar(diff, offset_of(diff.layout, di)).f;
                            double v[2][2];
                            for (int i = 0; i < 2; ++i)
                                for (int j = 0; j < 2; ++j)
                                    v[i][j] = tap_value(m_param, src, n, c, pt, i, j);
                            gx += g *
                                  ((1 - pt.fy) * (v[0][1] - v[0][0]) + pt.fy * (v[1][1] - v[1][0]));
                            gy += g *
                                  ((1 - pt.fx) * (v[1][0] - v[0][0]) + pt.fx * (v[1][1] - v[0][1]));
                        }
                    size_t xi[4] = {n, oh, ow, 0}, yi[4] = {n, oh, ow, 1};
                    store_scalar(grad, offset_of(grad.layout, xi), Scalar::of_float(gx));
                    store_scalar(grad, offset_of(grad.layout, yi), Scalar::of_float(gy));
                }
    }
};

}  // namespace
NM_REGISTER_NAIVE(Remap, RemapImpl);
NM_REGISTER_NAIVE(RemapBackwardData, RemapBackwardDataImpl);
NM_REGISTER_NAIVE(RemapBackwardMat, RemapBackwardMatImpl);
}  // namespace neomeg::dnn::naive
