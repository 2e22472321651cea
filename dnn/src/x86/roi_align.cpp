// ROIAlign and its gradient on x86. Naive finds every output element's sample points and their
// bilinear taps again for each channel; here each roi's sample rows and columns are computed once
// per call (src/common/roi_geometry.h, naive's formulas) and the (roi, channel) planes of the
// forward, the (image, channel) planes of the backward, are split across OpenMP threads. Values
// are summed in double in naive's order (the taps of a sample, the samples of a bin; the backward
// adds each plane's contributions roi by roi as naive does), so results are naive's bits. The
// taps are scattered reads (two rows, two columns per sample, clipped to the image), which is why
// the loops are scalar. float32 tensors, any strides; other dtypes run naive.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi_geometry.h"
#include "src/x86/from_double.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

using roi_x86::Nchw;

// The sample points of every roi along one axis: entry (bin * samples + i) of the roi's span.
struct Samples {
    std::vector<roi::AlignGrid> grids;
    std::vector<roi::AxisTap> ys, xs;
    std::vector<size_t> y_at, x_at;  // each roi's first entry
    size_t work = 0;                 // taps over all rois' bins, per channel
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

// One sample's in-image taps in naive's order: their offsets in a plane and their weights, each
// the product of the two axes' weights as naive forms it.
struct SampleTaps {
    int n = 0;
    ptrdiff_t off[4];
    double w[4];
};

// Roi k's samples, bin by bin, each bin's sh x sw samples row by row.
void sample_taps(const Samples& s, size_t k, size_t ph_n, size_t pw_n, int64_t h, int64_t w,
                 const Nchw& sp, std::vector<SampleTaps>& out) {
    const roi::AlignGrid& g = s.grids[k];
    out.clear();
    for (size_t ph = 0; ph < ph_n; ++ph)
        for (size_t pw = 0; pw < pw_n; ++pw)
            for (uint32_t iy = 0; iy < g.sh; ++iy) {
                AxisPair ty(s.ys[s.y_at[k] + ph * g.sh + iy], h);
                for (uint32_t ix = 0; ix < g.sw; ++ix) {
                    AxisPair tx(s.xs[s.x_at[k] + pw * g.sw + ix], w);
                    SampleTaps t;
                    for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 2; ++j)
                            if (ty.in[i] && tx.in[j]) {
                                t.off[t.n] = sp.at(ty.at[i], tx.at[j]);
                                t.w[t.n++] = ty.w[i] * tx.w[j];
                            }
                    out.push_back(t);
                }
            }
}

// L channels' planes at once: each channel's sums are naive's, the L independent chains of
// dependent double additions keep the adder busy where one chain waits on each sum's latency.
// r[bin * L + l], a[bin * L + l]: the bin's value (maximum or mean) and argmax sample.
template <size_t L>
void align_bins(const std::vector<SampleTaps>& taps, size_t per_bin, bool max,
                const float* const* planes, double* r, int64_t* a) {
    const double count = static_cast<double>(per_bin);
    for (size_t b = 0, bins = taps.size() / per_bin; b < bins; ++b) {
        double best[L] = {}, sum[L] = {};
        int64_t arg[L];
        std::fill(arg, arg + L, int64_t(-1));
        for (size_t q = 0; q < per_bin; ++q) {
            const SampleTaps& t = taps[b * per_bin + q];
            double v[L] = {};
            for (int j = 0; j < t.n; ++j)
                for (size_t l = 0; l < L; ++l)
                    v[l] += t.w[j] * planes[l][t.off[j]];
            for (size_t l = 0; l < L; ++l) {
                sum[l] += v[l];
                if (max && (arg[l] < 0 || v[l] > best[l])) {
                    best[l] = v[l];
                    arg[l] = static_cast<int64_t>(q);
                }
            }
        }
        for (size_t l = 0; l < L; ++l) {
            r[b * L + l] = max ? best[l] : sum[l] / count;
            a[b * L + l] = max ? arg[l] : -1;
        }
    }
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
        constexpr size_t kLanes = 4;
        const size_t blocks = (channels + kLanes - 1) / kLanes;
        parallel_ranges(
                rois.size() * blocks, s.work * channels, kParallelGrain, [&](size_t b, size_t e) {
                    std::vector<SampleTaps> taps;
                    std::vector<double> r(ph_n * pw_n * kLanes);
                    std::vector<int64_t> a(r.size());
                    size_t have = SIZE_MAX;
                    for (size_t u = b; u < e; ++u) {
                        size_t k = u / blocks, c0 = u % blocks * kLanes;
                        size_t lanes = std::min(kLanes, channels - c0);
                        const roi::AlignGrid& g = s.grids[k];
                        if (have != k)
                            sample_taps(s, have = k, ph_n, pw_n, h, w, sp, taps);
                        const float* planes[kLanes];
                        for (size_t l = 0; l < lanes; ++l)
                            planes[l] = in + sp.plane(g.image, c0 + l);
                        size_t per_bin = size_t(g.sh) * g.sw;
                        if (lanes == kLanes)
                            align_bins<kLanes>(taps, per_bin, max, planes, r.data(), a.data());
                        for (size_t l = 0; l < lanes && lanes < kLanes; ++l)
                            align_bins<1>(taps, per_bin, max, planes + l,
                                          r.data() + l * ph_n * pw_n, a.data() + l * ph_n * pw_n);
                        for (size_t l = 0; l < lanes; ++l)
                            for (size_t bin = 0; bin < ph_n * pw_n; ++bin) {
                                // bin-major with L lanes, or lane-major blocks of one lane each
                                size_t at =
                                        lanes == kLanes ? bin * kLanes + l : l * ph_n * pw_n + bin;
                                auto p = static_cast<int64_t>(bin / pw_n);
                                auto q = static_cast<int64_t>(bin % pw_n);
                                out[dp.plane(k, c0 + l) + dp.at(p, q)] = from_double<float>(r[at]);
                                idx[ip.plane(k, c0 + l) + ip.at(p, q)] =
                                        static_cast<int32_t>(a[at]);
                            }
                    }
                });
    }
};

// Each (image, channel) plane of grad sums, in double in the workspace, the contributions of the
// rois of that image in their order, then is rounded once.
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
        const size_t batch = grad.layout[0], channels = grad.layout[1];
        auto rois = roi_x86::read_rois(inputs[1], batch, param_str());
        if (grad.layout.is_empty())
            return;
        const Samples s = samples_of(m_param, rois);
        const size_t ph_n = diff.layout[2], pw_n = diff.layout[3];
        const auto h = static_cast<int64_t>(grad.layout[2]);
        const auto w = static_cast<int64_t>(grad.layout[3]);
        const Nchw dp(diff.layout), ip(index.layout), gp(grad.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        if (max)  // the error naive gives, before any thread starts
            for (size_t k = 0; k < rois.size(); ++k)
                for (size_t c = 0; c < channels; ++c)
                    for (size_t ph = 0; ph < ph_n; ++ph)
                        for (size_t pw = 0; pw < pw_n; ++pw) {
                            int64_t v = idx[ip.plane(k, c) + ip.at(static_cast<int64_t>(ph),
                                                                   static_cast<int64_t>(pw))];
                            const roi::AlignGrid& g = s.grids[k];
                            NM_THROW_IF(v < 0 || v >= static_cast<int64_t>(g.sh) * g.sw, IndexError,
                                        param_str(), ": index ", v, " is not a sample of roi ", k,
                                        "'s ", g.sh, "x", g.sw, " grid");
                        }
        std::vector<std::vector<size_t>> of_image(batch);
        for (size_t k = 0; k < rois.size(); ++k)
            of_image[rois[k].image].push_back(k);
        const size_t plane_n = static_cast<size_t>(h * w);
        auto* acc_all = reinterpret_cast<double*>(ws.ptr);
        size_t work = (max ? rois.size() * ph_n * pw_n * 4 : s.work) * channels +
                      grad.layout.total_nr_elems();
        parallel_ranges(batch * channels, work, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t n = u / channels, c = u % channels;
                double* acc = acc_all + u * plane_n;
                std::fill(acc, acc + plane_n, 0.0);
                auto scatter = [&](const roi::AxisTap& y, const roi::AxisTap& x, double g) {
                    AxisPair ty(y, h), tx(x, w);
                    for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 2; ++j)
                            if (ty.in[i] && tx.in[j])
                                acc[ty.at[i] * w + tx.at[j]] += ty.w[i] * tx.w[j] * g;
                };
                for (size_t k : of_image[n]) {
                    const roi::AlignGrid& g = s.grids[k];
                    const roi::AxisTap* ys = &s.ys[s.y_at[k]];
                    const roi::AxisTap* xs = &s.xs[s.x_at[k]];
                    for (size_t ph = 0; ph < ph_n; ++ph)
                        for (size_t pw = 0; pw < pw_n; ++pw) {
                            auto p = static_cast<int64_t>(ph), q = static_cast<int64_t>(pw);
                            double d = dy[dp.plane(k, c) + dp.at(p, q)];
                            if (max) {
                                auto v = static_cast<uint32_t>(idx[ip.plane(k, c) + ip.at(p, q)]);
                                scatter(ys[ph * g.sh + v / g.sw], xs[pw * g.sw + v % g.sw], d);
                                continue;
                            }
                            double share = d / (static_cast<double>(g.sh) * g.sw);
                            for (uint32_t iy = 0; iy < g.sh; ++iy)
                                for (uint32_t ix = 0; ix < g.sw; ++ix)
                                    scatter(ys[ph * g.sh + iy], xs[pw * g.sw + ix], share);
                        }
                }
                float* plane = gr + gp.plane(n, c);
                for (int64_t y = 0; y < h; ++y)
                    for (int64_t x = 0; x < w; ++x)
                        plane[gp.at(y, x)] = from_double<float>(acc[y * w + x]);
            }
        });
    }
};

}  // namespace
NM_REGISTER_X86(ROIAlign, ROIAlignImpl);
NM_REGISTER_X86(ROIAlignBackward, ROIAlignBackwardImpl);
}  // namespace neomeg::dnn::x86
