// DeformablePSROIPooling and its gradient on x86. A roi's sample points depend on its bin and
// part, not on the channel, so each roi's points are placed once per call (naive places them
// per output element; src/common/psroi_geometry.h, naive's float32 arithmetic) and:
// - the forward lists each bin's taken samples as bilinear taps and pools all channels at once
//   from a channels-last image (roi_bins_hwy.h, the mean of a bin's samples in float32; naive
//   sums in double), count being the number of samples listed;
// - the gradient for src sums each (image, channel) plane in double in naive's order
//   (grad_planes.h), threads owning planes; the gradient for trans sums each roi's parts in
//   double in naive's order, threads owning rois: both are naive's bits.
// float32 tensors, any strides; other dtypes run naive.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/psroi_geometry.h"
#include "src/x86/float32_loop.h"
#include "src/x86/grad_planes.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

using Param = param::DeformablePSROIPooling;

// One taken sample: its clamped point.
struct Point {
    float y, x;
};

// Every roi's taken samples, bin by bin: roi k's bin b's points are
// points[first[k * bins + b] .. first[k * bins + b + 1]).
struct Samples {
    std::vector<Point> points;
    std::vector<size_t> first;
    std::vector<psroi::Roi> geo;
    std::vector<std::array<size_t, 2>> part;  // each bin's part (row, column) in trans
};

Samples samples_of(const Param& p, const std::vector<roi_x86::RoiRow>& rois, const TensorND& trans,
                   int64_t h, int64_t w) {
    Samples s;
    const size_t bins = static_cast<size_t>(p.pooled_h) * p.pooled_w;
    const Nchw tp(trans.layout);
    const auto* tr = static_cast<const float*>(trans.raw_ptr());
    for (size_t ph = 0; ph < p.pooled_h; ++ph)
        for (size_t pw = 0; pw < p.pooled_w; ++pw)
            s.part.push_back({static_cast<size_t>(psroi::part_of(ph, p.pooled_h, p.part_size)),
                              static_cast<size_t>(psroi::part_of(pw, p.pooled_w, p.part_size))});
    for (size_t k = 0; k < rois.size(); ++k) {
        const double* r = rois[k].r;
        psroi::Roi g = psroi::roi_of(p, static_cast<float>(r[1]), static_cast<float>(r[2]),
                                     static_cast<float>(r[3]), static_cast<float>(r[4]));
        s.geo.push_back(g);
        for (size_t b = 0; b < bins; ++b) {
            s.first.push_back(s.points.size());
            size_t ph = b / p.pooled_w, pw = b % p.pooled_w;
            float ox = 0, oy = 0;
            if (!p.no_trans) {
                auto i = static_cast<int64_t>(s.part[b][0]), j = static_cast<int64_t>(s.part[b][1]);
                ox = tr[tp.plane(k, 0) + tp.at(i, j)] * p.trans_std;
                oy = tr[tp.plane(k, 1) + tp.at(i, j)] * p.trans_std;
            }
            float ys = psroi::bin_start(g.y0, ph, g.bin_h, oy, g.roi_h);
            float xs = psroi::bin_start(g.x0, pw, g.bin_w, ox, g.roi_w);
            for (uint32_t iy = 0; iy < p.sample_per_part; ++iy)
                for (uint32_t ix = 0; ix < p.sample_per_part; ++ix) {
                    float y, x;
                    if (psroi::take(xs + static_cast<float>(ix) * g.sub_w, w, x) &&
                        psroi::take(ys + static_cast<float>(iy) * g.sub_h, h, y))
                        s.points.push_back({y, x});
                }
        }
    }
    s.first.push_back(s.points.size());
    return s;
}

// The four taps of a clamped point in naive's order, with their weights in double.
struct Bilinear {
    int64_t pix[4];
    double w[4];
    double ay, ax;
    Bilinear(const Point& p, int64_t width) {
        psroi::Taps ty = psroi::taps_of(p.y), tx = psroi::taps_of(p.x);
        ay = ty.a;
        ax = tx.a;
        pix[0] = ty.lo * width + tx.lo;
        pix[1] = ty.hi * width + tx.lo;
        pix[2] = ty.lo * width + tx.hi;
        pix[3] = ty.hi * width + tx.hi;
        w[0] = (1 - ay) * (1 - ax);
        w[1] = ay * (1 - ax);
        w[2] = (1 - ay) * ax;
        w[3] = ay * ax;
    }
};

class DeformablePSROIPoolingImpl final : public Float32Loop<DeformablePSROIPooling> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &count = outputs[1];
        auto rois = roi_x86::read_rois(inputs[1], src.layout[0], param_str());
        if (dst.layout.is_empty())
            return;
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        const Samples s = samples_of(m_param, rois, inputs[2], h, w);
        const size_t channels = src.layout[1], pixels = static_cast<size_t>(h * w);
        const size_t cp = roi_x86::channel_blocks(channels);
        const size_t pw_n = m_param.pooled_w, bins = m_param.pooled_h * pw_n;
        const ChannelsLast img(src, cp);
        const Nchw dp(dst.layout), cnp(count.layout);
        auto* out = static_cast<float*>(dst.raw_ptr());
        auto* cnt = static_cast<float*>(count.raw_ptr());
        size_t work = (s.points.size() * 4 + rois.size() * bins) * cp;
        parallel_ranges(rois.size(), work, kParallelGrain, [&](size_t lo, size_t hi) {
            roi_x86::RoiTaps taps;
            std::vector<float> val(bins * cp);
            std::vector<int32_t> arg(bins * cp);
            for (size_t k = lo; k < hi; ++k) {
                taps.clear();
                for (size_t b = 0; b < bins; ++b) {
                    for (size_t q = s.first[k * bins + b]; q < s.first[k * bins + b + 1]; ++q) {
                        Bilinear t(s.points[q], w);
                        for (int i = 0; i < 4; ++i)
                            taps.tap(t.pix[i], static_cast<float>(t.w[i]));
                        taps.end_sample(0);
                    }
                    taps.end_bin();
                }
                roi_bins_f32(img.data() + rois[k].image * pixels * cp, cp, taps.list(), false,
                             val.data(), arg.data());
                for (size_t c = 0; c < channels; ++c)
                    for (size_t b = 0; b < bins; ++b) {
                        auto p = static_cast<int64_t>(b / pw_n), q = static_cast<int64_t>(b % pw_n);
                        out[dp.plane(k, c) + dp.at(p, q)] = val[b * cp + c];
                        cnt[cnp.plane(k, c) + cnp.at(p, q)] = static_cast<float>(
                                s.first[k * bins + b + 1] - s.first[k * bins + b]);
                    }
            }
        });
    }
};

class DeformablePSROIPoolingBackwardImpl final
    : public Float32Loop<DeformablePSROIPoolingBackward> {
public:
    using Float32Loop::Float32Loop;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return std::max(outputs[0].total_nr_elems() * sizeof(double),
                        Float32Loop::get_workspace_in_bytes(inputs, outputs));
    }

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace ws) override {
        const TensorND &src = inputs[0], &trans = inputs[2], &diff = inputs[3], &count = inputs[4];
        const TensorND &gsrc = outputs[0], &gtrans = outputs[1];
        auto rois = roi_x86::read_rois(inputs[1], src.layout[0], param_str());
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        const Samples s = samples_of(m_param, rois, trans, h, w);
        const size_t channels = src.layout[1], pw_n = m_param.pooled_w;
        const size_t bins = m_param.pooled_h * pw_n;
        const Nchw dp(diff.layout), cnp(count.layout), sp(src.layout), tgp(gtrans.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto* cn = static_cast<const float*>(count.raw_ptr());
        const auto* in = static_cast<const float*>(src.raw_ptr());
        // diff / count of roi k's bin b in channel c; none where count is not positive.
        auto share = [&](size_t k, size_t c, size_t b) -> std::optional<double> {
            auto p = static_cast<int64_t>(b / pw_n), q = static_cast<int64_t>(b % pw_n);
            double n = cn[cnp.plane(k, c) + cnp.at(p, q)];
            if (!(n > 0))
                return std::nullopt;
            return dy[dp.plane(k, c) + dp.at(p, q)] / n;
        };
        const size_t work = s.points.size() * channels * 8;
        if (!gsrc.layout.is_empty()) {
            const auto of_image = roi_x86::rois_of_images(rois, src.layout[0]);
            accumulate_planes(gsrc, reinterpret_cast<double*>(ws.ptr), work,
                              [&](size_t n, size_t c, double* acc) {
                                  for (size_t k : of_image[n])
                                      for (size_t b = 0; b < bins; ++b) {
                                          std::optional<double> sh = share(k, c, b);
                                          if (!sh)
                                              continue;
                                          double g = *sh;
                                          for (size_t q = s.first[k * bins + b];
                                               q < s.first[k * bins + b + 1]; ++q) {
                                              Bilinear t(s.points[q], w);
                                              for (int i = 0; i < 4; ++i)
                                                  acc[t.pix[i]] += t.w[i] * g;
                                          }
                                      }
                              });
        }
        auto* gt = static_cast<float*>(gtrans.raw_ptr());
        const size_t parts = static_cast<size_t>(gtrans.layout[2]) * gtrans.layout[3];
        auto store = [&](size_t k, const double* v) {
            for (size_t a = 0; a < gtrans.layout[1]; ++a)
                for (size_t i = 0; i < parts; ++i)
                    gt[tgp.plane(k, a) + tgp.at(static_cast<int64_t>(i / gtrans.layout[3]),
                                                static_cast<int64_t>(i % gtrans.layout[3]))] =
                            static_cast<float>(v[a * parts + i]);
        };
        const std::vector<double> zeros(gtrans.layout[1] * parts, 0.0);
        const bool moved = !m_param.no_trans;
        parallel_ranges(
                gtrans.layout[0], moved ? work : 0, kParallelGrain, [&](size_t lo, size_t hi) {
                    std::vector<double> acc(zeros.size());
                    for (size_t k = lo; k < hi; ++k) {
                        if (!moved || k >= rois.size()) {
                            store(k, zeros.data());
                            continue;
                        }
                        std::fill(acc.begin(), acc.end(), 0.0);
                        const psroi::Roi& g = s.geo[k];
                        const float* img = in + sp.plane(rois[k].image, 0);
                        for (size_t c = 0; c < channels; ++c)
                            for (size_t b = 0; b < bins; ++b) {
                                std::optional<double> sh = share(k, c, b);
                                if (!sh)
                                    continue;
                                double d = *sh;
                                size_t part = s.part[b][0] * gtrans.layout[3] + s.part[b][1];
                                for (size_t q = s.first[k * bins + b];
                                     q < s.first[k * bins + b + 1]; ++q) {
                                    psroi::Taps ty = psroi::taps_of(s.points[q].y),
                                                tx = psroi::taps_of(s.points[q].x);
                                    double ay = ty.a, ax = tx.a;
                                    auto u = [&](int64_t yy, int64_t xx) {
                                        return static_cast<double>(
                                                img[static_cast<ptrdiff_t>(c) * sp.s[1] +
                                                    sp.at(yy, xx)]);
                                    };
                                    double u00 = u(ty.lo, tx.lo), u01 = u(ty.hi, tx.lo),
                                           u10 = u(ty.lo, tx.hi), u11 = u(ty.hi, tx.hi);
                                    double sx = (1 - ay) * (u10 - u00) + ay * (u11 - u01);
                                    double sy = (1 - ax) * (u01 - u00) + ax * (u11 - u10);
                                    acc[part] += sx * m_param.trans_std * d * g.roi_w;
                                    acc[parts + part] += sy * m_param.trans_std * d * g.roi_h;
                                }
                            }
                        store(k, acc.data());
                    }
                });
    }
};

}  // namespace
NM_REGISTER_X86(DeformablePSROIPooling, DeformablePSROIPoolingImpl);
NM_REGISTER_X86(DeformablePSROIPoolingBackward, DeformablePSROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
