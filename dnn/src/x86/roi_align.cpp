// ROIAlign and its gradient on x86. Naive finds every output element's sample points and their
// bilinear taps again for each channel; here each roi's sample rows and columns are computed once
// per call (src/common/roi_geometry.h, naive's formulas) and the (roi, channel) planes of the
// forward, the (image, channel) planes of the backward, are split across OpenMP threads.
//
// The forward lists a roi's in-image taps (pixel and float32 weight, naive's product of the
// axes' weights rounded once), sample by sample, and pools them over all channels at once in
// float32 (roi_common.h, roi_bins_hwy.h): naive sums in double, so values differ by the float32
// sums' rounding (the bound is derived in dnn/test/x86/vision_loops.h and roi.cpp).
// Out-of-image taps are left out of the list, as naive skips them, so a NaN or infinity outside
// a sample's taps never reaches it. The backward sums
// in double in naive's order (grad_planes.h): naive's bits. float32 tensors, any strides; other
// dtypes run naive.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi_geometry.h"
#include "src/x86/float32_loop.h"
#include "src/x86/grad_planes.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

// The sample points of every roi along one axis: entry (bin * samples + i) of the roi's span.
struct Samples {
    std::vector<roi::AlignGrid> grids;
    std::vector<roi::AxisTap> ys, xs;
    std::vector<size_t> y_at, x_at;  // each roi's first entry
    size_t work = 0;                 // taps over all rois' bins, per channel

    const roi::AxisTap& y(size_t k, size_t ph, uint32_t iy) const {
        return ys[y_at[k] + ph * grids[k].sh + iy];
    }
    const roi::AxisTap& x(size_t k, size_t pw, uint32_t ix) const {
        return xs[x_at[k] + pw * grids[k].sw + ix];
    }
};

Samples samples_of(const param::ROIAlign& p, const std::vector<roi_x86::RoiRow>& rois) {
    Samples s;
    for (const auto& row : rois) {
        roi::AlignGrid g = roi::align_grid(p, row.r, row.image);
        s.grids.push_back(g);
        s.y_at.push_back(s.ys.size());
        s.x_at.push_back(s.xs.size());
        for (size_t ph = 0; ph < p.pooled_height; ++ph)
            for (uint32_t iy = 0; iy < g.sh; ++iy)
                s.ys.push_back(roi::axis_tap(g.y(ph, iy)));
        for (size_t pw = 0; pw < p.pooled_width; ++pw)
            for (uint32_t ix = 0; ix < g.sw; ++ix)
                s.xs.push_back(roi::axis_tap(g.x(pw, ix)));
        s.work += static_cast<size_t>(p.pooled_height) * p.pooled_width * g.sh * g.sw * 4;
    }
    return s;
}

// The two taps of a sample along an axis of `len` pixels: pixel t.i0 + i with weight
// (i ? a : 1 - a), where inside.
struct AxisPair {
    int64_t at[2];
    double w[2];
    bool in[2];
    AxisPair(const roi::AxisTap& t, int64_t len) {
        for (int i = 0; i < 2; ++i) {
            at[i] = t.i0 + i;
            in[i] = at[i] >= 0 && at[i] < len;
            w[i] = i ? t.a : 1 - t.a;
        }
    }
};

class ROIAlignImpl final : public Float32Loop<ROIAlign> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &index = outputs[1];
        auto rois = roi_x86::read_rois(inputs[1], src.layout[0], param_str());
        if (dst.layout.is_empty())
            return;
        const Samples s = samples_of(m_param, rois);
        const size_t ph_n = dst.layout[2], pw_n = dst.layout[3];
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        // Each sample's in-image taps in naive's order, the weight naive's product rounded once.
        auto build = [&](size_t k, roi_x86::RoiTaps& t) {
            const roi::AlignGrid& g = s.grids[k];
            for (size_t ph = 0; ph < ph_n; ++ph)
                for (size_t pw = 0; pw < pw_n; ++pw) {
                    for (uint32_t iy = 0; iy < g.sh; ++iy) {
                        AxisPair ty(s.y(k, ph, iy), h);
                        for (uint32_t ix = 0; ix < g.sw; ++ix) {
                            AxisPair tx(s.x(k, pw, ix), w);
                            for (int i = 0; i < 2; ++i)
                                for (int j = 0; j < 2; ++j)
                                    if (ty.in[i] && tx.in[j])
                                        t.tap(ty.at[i] * w + tx.at[j],
                                              static_cast<float>(ty.w[i] * tx.w[j]));
                            t.end_sample(iy * g.sw + ix);
                        }
                    }
                    t.end_bin();
                }
        };
        roi_x86::roi_forward(src, rois, dst, index, m_param.mode == Param::Mode::MAX,
                             s.work * dst.layout[1], build);
    }
};

class ROIAlignBackwardImpl final : public Float32Loop<ROIAlignBackward> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace ws) override {
        const TensorND &diff = inputs[0], &index = inputs[2], &grad = outputs[0];
        const size_t channels = grad.layout[1];
        auto rois = roi_x86::read_rois(inputs[1], grad.layout[0], param_str());
        if (grad.layout.is_empty())
            return;
        const Samples s = samples_of(m_param, rois);
        const size_t ph_n = diff.layout[2], pw_n = diff.layout[3];
        const auto h = static_cast<int64_t>(grad.layout[2]);
        const auto w = static_cast<int64_t>(grad.layout[3]);
        const Nchw dp(diff.layout), ip(index.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        if (max)
            roi_x86::check_index(index, [&](size_t k, size_t, size_t, int64_t v) {
                const roi::AlignGrid& g = s.grids[k];
                NM_THROW_IF(v < 0 || v >= static_cast<int64_t>(g.sh) * g.sw, IndexError,
                            param_str(), ": index ", v, " is not a sample of roi ", k, "'s ", g.sh,
                            "x", g.sw, " grid");
            });
        const auto of_image = roi_x86::rois_of_images(rois, grad.layout[0]);
        size_t work = (max ? rois.size() * ph_n * pw_n * 4 : s.work) * channels;
        accumulate_planes(
                grad, reinterpret_cast<double*>(ws.ptr), work,
                [&](size_t n, size_t c, double* acc) {
                    auto scatter = [&](const roi::AxisTap& y, const roi::AxisTap& x, double g) {
                        AxisPair ty(y, h), tx(x, w);
                        for (int i = 0; i < 2; ++i)
                            for (int j = 0; j < 2; ++j)
                                if (ty.in[i] && tx.in[j])
                                    acc[ty.at[i] * w + tx.at[j]] += ty.w[i] * tx.w[j] * g;
                    };
                    for (size_t k : of_image[n]) {
                        const roi::AlignGrid& g = s.grids[k];
                        for (size_t ph = 0; ph < ph_n; ++ph)
                            for (size_t pw = 0; pw < pw_n; ++pw) {
                                auto p = static_cast<int64_t>(ph), q = static_cast<int64_t>(pw);
                                double d = dy[dp.plane(k, c) + dp.at(p, q)];
                                if (max) {
                                    auto v = static_cast<uint32_t>(
                                            idx[ip.plane(k, c) + ip.at(p, q)]);
                                    scatter(s.y(k, ph, v / g.sw), s.x(k, pw, v % g.sw), d);
                                    continue;
                                }
                                double share = d / (static_cast<double>(g.sh) * g.sw);
                                for (uint32_t iy = 0; iy < g.sh; ++iy)
                                    for (uint32_t ix = 0; ix < g.sw; ++ix)
                                        scatter(s.y(k, ph, iy), s.x(k, pw, ix), share);
                            }
                    }
                });
    }
};

}  // namespace
NM_REGISTER_X86(ROIAlign, ROIAlignImpl);
NM_REGISTER_X86(ROIAlignBackward, ROIAlignBackwardImpl);
}  // namespace neomeg::dnn::x86
