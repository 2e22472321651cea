// ROIAlign and its gradient, in double. Each roi cuts its box into pooled_height x pooled_width
// bins and each bin into a grid of equal sub-bins whose centres are sampled bilinearly from the
// four pixels around them, a pixel outside the image reading 0 (src/common/roi_geometry.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi.h"
#include "src/common/roi_geometry.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using Param = param::ROIAlign;

using Grid = roi::AlignGrid;

// The rois' grids, after checking that each names an image of the batch.
std::vector<Grid> grids_of(const Param& p, const TensorND& rois, size_t batch,
                           const std::string& who) {
    std::vector<Grid> grids(rois.layout.shape[0]);
    for (size_t k = 0; k < grids.size(); ++k) {
        double r[5];
        for (size_t j = 0; j < 5; ++j) {
            size_t idx[2] = {k, j};
            r[j] = load_scalar(rois, offset_of(rois.layout, idx)).f;
        }
        int64_t b = roi::batch_index(r[0], batch);
        NM_THROW_IF(b < 0, IndexError, roi::bad_batch_message(who, k, r[0], batch));
        grids[k] = roi::align_grid(p, r, static_cast<size_t>(b));
    }
    return grids;
}

// The four taps of the sample at (y, x): rows r[i], columns q[j], weights w[i][j].
struct Taps {
    int64_t r[2], q[2];
    double w[2][2];
    Taps(double y, double x) {
        roi::AxisTap ty = roi::axis_tap(y), tx = roi::axis_tap(x);
        r[0] = ty.i0;
        q[0] = tx.i0;
        r[1] = r[0] + 1;
        q[1] = q[0] + 1;
        double ay = ty.a, ax = tx.a;
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
                w[i][j] = (i ? ay : 1 - ay) * (j ? ax : 1 - ax);
    }
    bool inside(int i, int j, int64_t h, int64_t wd) const {
        return r[i] >= 0 && r[i] < h && q[j] >= 0 && q[j] < wd;
    }
};

double sample(const TensorND& src, size_t b, size_t c, double y, double x) {
    auto h = static_cast<int64_t>(src.layout.shape[2]),
         w = static_cast<int64_t>(src.layout.shape[3]);
    Taps t(y, x);
    double v = 0;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            if (t.inside(i, j, h, w)) {
                size_t idx[4] = {b, c, static_cast<size_t>(t.r[i]), static_cast<size_t>(t.q[j])};
                v += t.w[i][j] * load_scalar(src, offset_of(src.layout, idx)).f;
            }
    return v;
}

class ROIAlignImpl final : public ROIAlign {
public:
    using ROIAlign::ROIAlign;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &index = outputs[1];
        auto grids = grids_of(m_param, inputs[1], src.layout.shape[0], param_str());
        bool max = m_param.mode == Param::Mode::MAX;
        for_each_index(dst.layout, [&](const auto& idx) {
            const Grid& g = grids[idx[0]];
            double best = 0, sum = 0;
            int64_t arg = -1;
            for (uint32_t iy = 0; iy < g.sh; ++iy)
                for (uint32_t ix = 0; ix < g.sw; ++ix) {
                    double v = sample(src, g.image, idx[1], g.y(idx[2], iy), g.x(idx[3], ix));
                    sum += v;
                    if (arg < 0 || v > best) {
                        best = v;
                        arg = iy * g.sw + ix;
                    }
                }
            double out = max ? best : sum / (static_cast<double>(g.sh) * g.sw);
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(out));
            store_scalar(index, offset_of(index.layout, idx.data()),
                         Scalar::of_int(max ? arg : -1));
        });
    }
};

// Scatters each diff element onto the taps of its samples, summing in double in the workspace.
class ROIAlignBackwardImpl final : public ROIAlignBackward {
public:
    using ROIAlignBackward::ROIAlignBackward;
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout> outputs) override {
        return outputs[0].total_nr_elems() * sizeof(double);
    }
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) override {
        const TensorND &diff = inputs[0], &index = inputs[2], &grad = outputs[0];
        auto grids = grids_of(m_param, inputs[1], grad.layout.shape[0], param_str());
        TensorLayout acc_layout(grad.layout, grad.layout.dtype);  // contiguous index of grad
        auto* acc = reinterpret_cast<double*>(workspace.ptr);
        std::fill(acc, acc + grad.layout.total_nr_elems(), 0.0);
        auto h = static_cast<int64_t>(grad.layout.shape[2]);
        auto w = static_cast<int64_t>(grad.layout.shape[3]);
        auto scatter = [&](size_t b, size_t c, double y, double x, double g) {
            Taps t(y, x);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                    if (t.inside(i, j, h, w)) {
                        size_t gi[4] = {b, c, static_cast<size_t>(t.r[i]),
                                        static_cast<size_t>(t.q[j])};
                        acc[offset_of(acc_layout, gi)] += t.w[i][j] * g;
                    }
        };
        bool max = m_param.mode == Param::Mode::MAX;
        for_each_index(diff.layout, [&](const auto& idx) {
            const Grid& g = grids[idx[0]];
            double d = load_scalar(diff, offset_of(diff.layout, idx.data())).f;
            if (max) {
                int64_t s = elem<int32_t>(
                        index, static_cast<ptrdiff_t>(offset_of(index.layout, idx.data())));
                NM_THROW_IF(s < 0 || s >= static_cast<int64_t>(g.sh) * g.sw, IndexError,
                            param_str(), ": index ", s, " is not a sample of roi ", idx[0], "'s ",
                            g.sh, "x", g.sw, " grid");
                auto iy = static_cast<uint32_t>(s / g.sw), ix = static_cast<uint32_t>(s % g.sw);
                scatter(g.image, idx[1], g.y(idx[2], iy), g.x(idx[3], ix), d);
                return;
            }
            double share = d / (static_cast<double>(g.sh) * g.sw);
            for (uint32_t iy = 0; iy < g.sh; ++iy)
                for (uint32_t ix = 0; ix < g.sw; ++ix)
                    scatter(g.image, idx[1], g.y(idx[2], iy), g.x(idx[3], ix), share);
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(ROIAlign, ROIAlignImpl);
NM_REGISTER_NAIVE(ROIAlignBackward, ROIAlignBackwardImpl);
}  // namespace neomeg::dnn::naive
