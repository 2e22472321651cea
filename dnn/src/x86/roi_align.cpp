// ROIAlign and its gradient on x86. Naive finds every output element's sample points and their
// bilinear taps again for each channel; here each roi's sample rows and columns are computed once
// per call (src/common/roi_geometry.h, naive's formulas) and the (roi, channel) planes of the
// forward, the (image, channel) planes of the backward, are split across OpenMP threads.
//
// The forward turns a roi's samples into one flat list of its in-image taps (plane offset and
// float32 weight, naive's product of the axes' weights rounded once), bin by bin, and sums each
// bin's taps in float32 over four independent partial sums (AVERAGE) or each sample's taps in
// order (MAX): naive sums in double, so values differ by the float32 sums' rounding (the bound
// is derived in dnn/test/x86/roi.cpp). Out-of-image taps are left out of the list, as naive
// skips them, so a NaN or infinity outside a sample's taps never reaches it. The backward sums
// in double in naive's order (grad_planes.h): naive's bits. float32 tensors, any strides; other
// dtypes run naive.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi_geometry.h"
#include "src/x86/grad_planes.h"
#include "src/x86/loop_kernel.h"
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

// One roi's in-image taps, bin by bin, each bin's sh x sw samples row by row, each sample's taps
// in naive's order; sample q's taps end at end[q].
struct RoiTaps {
    std::vector<ptrdiff_t> off;
    std::vector<float> w;
    std::vector<uint32_t> end;

    void fill(const Samples& s, size_t k, size_t ph_n, size_t pw_n, int64_t h, int64_t wd,
              const Nchw& sp) {
        const roi::AlignGrid& g = s.grids[k];
        off.clear();
        w.clear();
        end.clear();
        for (size_t ph = 0; ph < ph_n; ++ph)
            for (size_t pw = 0; pw < pw_n; ++pw)
                for (uint32_t iy = 0; iy < g.sh; ++iy) {
                    AxisPair ty(s.y(k, ph, iy), h);
                    for (uint32_t ix = 0; ix < g.sw; ++ix) {
                        AxisPair tx(s.x(k, pw, ix), wd);
                        for (int i = 0; i < 2; ++i)
                            for (int j = 0; j < 2; ++j)
                                if (ty.in[i] && tx.in[j]) {
                                    off.push_back(sp.at(ty.at[i], tx.at[j]));
                                    w.push_back(static_cast<float>(ty.w[i] * tx.w[j]));
                                }
                        end.push_back(static_cast<uint32_t>(off.size()));
                    }
                }
    }
};

// The mean of taps [t, e) of a plane over `count` samples: four partial sums, independent
// chains of float additions (one chain would wait on each addition's latency).
float mean_of(const RoiTaps& r, const float* plane, size_t t, size_t e, float count) {
    float a[4] = {};
    for (; t + 4 <= e; t += 4)
        for (size_t l = 0; l < 4; ++l)
            a[l] += r.w[t + l] * plane[r.off[t + l]];
    for (; t < e; ++t)
        a[0] += r.w[t] * plane[r.off[t]];
    return ((a[0] + a[1]) + (a[2] + a[3])) / count;
}

// The largest sample of samples [q, q + n) and its rank in the bin, naive's rule: the first
// sample taken, a later one only when greater (a NaN first stays; a later NaN never wins).
std::pair<float, int32_t> max_of(const RoiTaps& r, const float* plane, size_t q, size_t n) {
    float best = 0;
    int32_t arg = -1;
    for (size_t i = 0; i < n; ++i) {
        float v = 0;
        for (size_t t = q + i ? r.end[q + i - 1] : 0; t < r.end[q + i]; ++t)
            v += r.w[t] * plane[r.off[t]];
        if (arg < 0 || v > best) {
            best = v;
            arg = static_cast<int32_t>(i);
        }
    }
    return {best, arg};
}

class ROIAlignImpl final : public LoopKernel<ROIAlign> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!roi_x86::all_float32(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &src = inputs[0], &dst = outputs[0], &index = outputs[1];
        auto rois = roi_x86::read_rois(inputs[1], src.layout[0], param_str());
        if (dst.layout.is_empty())
            return;
        const Samples s = samples_of(m_param, rois);
        const size_t channels = dst.layout[1], ph_n = dst.layout[2], pw_n = dst.layout[3];
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        const Nchw sp(src.layout), dp(dst.layout), ip(index.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        auto* out = static_cast<float*>(dst.raw_ptr());
        auto* idx = static_cast<int32_t*>(index.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        roi_x86::roi_planes<RoiTaps>(
                rois.size(), channels, s.work * channels,
                [&](size_t k, RoiTaps& r) { r.fill(s, k, ph_n, pw_n, h, w, sp); },
                [&](const RoiTaps& r, size_t k, size_t c) {
                    const roi::AlignGrid& g = s.grids[k];
                    const size_t per_bin = size_t(g.sh) * g.sw;
                    const float* plane = in + sp.plane(g.image, c);
                    float* o = out + dp.plane(k, c);
                    int32_t* a = idx + ip.plane(k, c);
                    for (size_t bin = 0; bin < ph_n * pw_n; ++bin) {
                        auto p = static_cast<int64_t>(bin / pw_n);
                        auto q = static_cast<int64_t>(bin % pw_n);
                        size_t first = bin * per_bin;
                        auto [v, arg] =
                                max ? max_of(r, plane, first, per_bin)
                                    : std::pair{mean_of(r, plane, first ? r.end[first - 1] : 0,
                                                        r.end[first + per_bin - 1],
                                                        static_cast<float>(per_bin)),
                                                int32_t(-1)};
                        o[dp.at(p, q)] = v;
                        a[ip.at(p, q)] = arg;
                    }
                });
    }
};

class ROIAlignBackwardImpl final : public LoopKernel<ROIAlignBackward> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!roi_x86::all_float32(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
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
