// ROIPooling and its gradient on x86: each roi's bins (src/common/roi_geometry.h, naive's
// integer bins) computed once per call instead of once per output element, the (roi, channel)
// planes of the forward and the (image, channel) planes of the backward split across OpenMP
// threads. Values are pooled in double in naive's order, so results are naive's bits. float32
// tensors, any strides; other dtypes run naive.
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
using Span = std::pair<int64_t, int64_t>;

// Every roi's bins: rows [first, last) of bin row ph at hs[k * ph_n + ph], columns likewise.
struct Bins {
    std::vector<size_t> image;
    std::vector<Span> hs, ws;
    size_t work = 0;  // pixels over all rois' bins, per channel
};

Bins bins_of(const param::ROIPooling& p, const std::vector<roi_x86::RoiRow>& rois, int64_t h,
             int64_t w) {
    Bins b;
    for (const auto& row : rois) {
        roi::PoolBox box = roi::pool_box(p, row.r, row.image);
        b.image.push_back(row.image);
        size_t rows = 0, cols = 0;
        for (size_t ph = 0; ph < p.pooled_height; ++ph) {
            b.hs.push_back(roi::pool_span(ph, box.bin_h, box.h0, h));
            rows += static_cast<size_t>(b.hs.back().second - b.hs.back().first);
        }
        for (size_t pw = 0; pw < p.pooled_width; ++pw) {
            b.ws.push_back(roi::pool_span(pw, box.bin_w, box.w0, w));
            cols += static_cast<size_t>(b.ws.back().second - b.ws.back().first);
        }
        b.work += rows * cols + static_cast<size_t>(p.pooled_height) * p.pooled_width;
    }
    return b;
}

// A bin of L channels' planes at once: each channel's sum and maximum are naive's, the L
// independent chains of dependent double additions keep the adder busy where one chain waits
// on each sum's latency. r[l]: the maximum or mean (0 for an empty bin), a[l]: the argmax pixel
// (y * w + x), -1 for AVERAGE and an empty bin.
template <size_t L>
void pool_bin(const float* const* planes, const Nchw& sp, int64_t hs, int64_t he, int64_t ws,
              int64_t we, int64_t w, bool max, double* r, int64_t* a) {
    int64_t count = (he - hs) * (we - ws);
    if (count == 0) {
        std::fill(r, r + L, 0.0);
        std::fill(a, a + L, int64_t(-1));
        return;
    }
    if (max) {
        // The first pixel taken, then every later one above the maximum (naive's rule: a NaN
        // first stays; a later NaN never wins), as selects rather than branches: random data
        // mispredicted the branch on most pixels.
        double best[L];
        int64_t arg[L];
        for (size_t l = 0; l < L; ++l) {
            best[l] = planes[l][sp.at(hs, ws)];
            arg[l] = hs * w + ws;
        }
        for (int64_t y = hs; y < he; ++y)
            for (int64_t x = y == hs ? ws + 1 : ws; x < we; ++x) {
                ptrdiff_t off = sp.at(y, x);
                for (size_t l = 0; l < L; ++l) {
                    double v = planes[l][off];
                    bool take = v > best[l];
                    best[l] = take ? v : best[l];
                    arg[l] = take ? y * w + x : arg[l];
                }
            }
        for (size_t l = 0; l < L; ++l) {
            r[l] = best[l];
            a[l] = arg[l];
        }
        return;
    }
    double sum[L] = {};
    for (int64_t y = hs; y < he; ++y)
        for (int64_t x = ws; x < we; ++x) {
            ptrdiff_t off = sp.at(y, x);
            for (size_t l = 0; l < L; ++l)
                sum[l] += planes[l][off];
        }
    for (size_t l = 0; l < L; ++l) {
        r[l] = sum[l] / static_cast<double>(count);
        a[l] = -1;
    }
}

class ROIPoolingImpl final : public LoopKernel<ROIPooling> {
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
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        const Bins bins = bins_of(m_param, rois, h, w);
        const size_t channels = dst.layout[1], ph_n = dst.layout[2], pw_n = dst.layout[3];
        const Nchw sp(src.layout), dp(dst.layout), ip(index.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        auto* out = static_cast<float*>(dst.raw_ptr());
        auto* idx = static_cast<int32_t*>(index.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        constexpr size_t kLanes = 4;
        const size_t blocks = (channels + kLanes - 1) / kLanes;
        parallel_ranges(
                rois.size() * blocks, bins.work * channels, kParallelGrain,
                [&](size_t b, size_t e) {
                    for (size_t u = b; u < e; ++u) {
                        size_t k = u / blocks, c0 = u % blocks * kLanes;
                        size_t lanes = std::min(kLanes, channels - c0);
                        const float* planes[kLanes];
                        for (size_t l = 0; l < lanes; ++l)
                            planes[l] = in + sp.plane(bins.image[k], c0 + l);
                        for (size_t ph = 0; ph < ph_n; ++ph)
                            for (size_t pw = 0; pw < pw_n; ++pw) {
                                auto [hs, he] = bins.hs[k * ph_n + ph];
                                auto [ws0, we] = bins.ws[k * pw_n + pw];
                                double r[kLanes];
                                int64_t a[kLanes];
                                if (lanes == kLanes)
                                    pool_bin<kLanes>(planes, sp, hs, he, ws0, we, w, max, r, a);
                                else
                                    for (size_t l = 0; l < lanes; ++l)
                                        pool_bin<1>(planes + l, sp, hs, he, ws0, we, w, max, r + l,
                                                    a + l);
                                auto p = static_cast<int64_t>(ph), q = static_cast<int64_t>(pw);
                                for (size_t l = 0; l < lanes; ++l) {
                                    out[dp.plane(k, c0 + l) + dp.at(p, q)] =
                                            from_double<float>(r[l]);
                                    idx[ip.plane(k, c0 + l) + ip.at(p, q)] =
                                            static_cast<int32_t>(a[l]);
                                }
                            }
                    }
                });
    }
};

// Each (image, channel) plane of grad sums, in double in the workspace, the contributions of the
// rois of that image in their order (the argmax pixel, or an equal share of the bin), then is
// rounded once.
class ROIPoolingBackwardImpl final : public LoopKernel<ROIPoolingBackward> {
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
        const auto h = static_cast<int64_t>(grad.layout[2]);
        const auto w = static_cast<int64_t>(grad.layout[3]);
        const Bins bins = bins_of(m_param, rois, h, w);
        const size_t ph_n = diff.layout[2], pw_n = diff.layout[3];
        const Nchw dp(diff.layout), ip(index.layout), gp(grad.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        const int64_t wd = std::max(w, int64_t(1));
        if (max)  // the error naive gives, before any thread starts
            for (size_t k = 0; k < rois.size(); ++k)
                for (size_t c = 0; c < channels; ++c)
                    for (size_t ph = 0; ph < ph_n; ++ph)
                        for (size_t pw = 0; pw < pw_n; ++pw) {
                            auto [hs, he] = bins.hs[k * ph_n + ph];
                            auto [ws0, we] = bins.ws[k * pw_n + pw];
                            int64_t s = idx[ip.plane(k, c) + ip.at(static_cast<int64_t>(ph),
                                                                   static_cast<int64_t>(pw))];
                            if (s == -1 && (he - hs) * (we - ws0) == 0)
                                continue;
                            int64_t y = s / wd, x = s % wd;
                            NM_THROW_IF(s < 0 || y < hs || y >= he || x < ws0 || x >= we,
                                        IndexError, param_str(), ": index ", s,
                                        " is not a pixel of bin (", ph, ", ", pw, ") of roi ", k);
                        }
        std::vector<std::vector<size_t>> of_image(batch);
        for (size_t k = 0; k < rois.size(); ++k)
            of_image[rois[k].image].push_back(k);
        const auto plane_n = static_cast<size_t>(h * w);
        auto* acc_all = reinterpret_cast<double*>(ws.ptr);
        size_t work = (max ? rois.size() * ph_n * pw_n : bins.work) * channels +
                      grad.layout.total_nr_elems();
        parallel_ranges(batch * channels, work, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t n = u / channels, c = u % channels;
                double* acc = acc_all + u * plane_n;
                std::fill(acc, acc + plane_n, 0.0);
                for (size_t k : of_image[n])
                    for (size_t ph = 0; ph < ph_n; ++ph)
                        for (size_t pw = 0; pw < pw_n; ++pw) {
                            auto p = static_cast<int64_t>(ph), q = static_cast<int64_t>(pw);
                            double d = dy[dp.plane(k, c) + dp.at(p, q)];
                            auto [hs, he] = bins.hs[k * ph_n + ph];
                            auto [ws0, we] = bins.ws[k * pw_n + pw];
                            int64_t count = (he - hs) * (we - ws0);
                            if (max) {
                                int64_t s = idx[ip.plane(k, c) + ip.at(p, q)];
                                if (s == -1 && count == 0)
                                    continue;
                                acc[(s / wd) * w + s % wd] += d;
                                continue;
                            }
                            double share = count ? d / static_cast<double>(count) : 0;
                            for (int64_t y = hs; y < he; ++y)
                                for (int64_t x = ws0; x < we; ++x)
                                    acc[y * w + x] += share;
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
NM_REGISTER_X86(ROIPooling, ROIPoolingImpl);
NM_REGISTER_X86(ROIPoolingBackward, ROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
