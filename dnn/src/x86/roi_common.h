// What the x86 ROIAlign, ROIPooling and DeformablePSROIPooling kernels share: the rois read once
// per call (checked as naive checks them), the forward's frame (rois
// across threads, each listing its taps for roi_bins_hwy.h), the check of the backward's argmax
// indices and the rois of each image.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/common/roi.h"
#include "src/x86/channels_last.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"
#include "src/x86/roi_bins_hwy.h"
#include "src/x86/transpose_hwy.h"

namespace neomeg::dnn::x86::roi_x86 {

// Each roi's five values in double with its image index, which must name an image of the batch
// (the error naive gives otherwise). rois is float32.
struct RoiRow {
    double r[5];
    size_t image;
};

inline std::vector<RoiRow> read_rois(const TensorND& rois, size_t batch, const std::string& who) {
    const auto* p = static_cast<const float*>(rois.raw_ptr());
    std::vector<RoiRow> out(rois.layout[0]);
    for (size_t k = 0; k < out.size(); ++k) {
        for (size_t j = 0; j < 5; ++j)
            out[k].r[j] = p[static_cast<ptrdiff_t>(k) * rois.layout.stride[0] +
                            static_cast<ptrdiff_t>(j) * rois.layout.stride[1]];
        int64_t b = roi::batch_index(out[k].r[0], batch);
        NM_THROW_IF(b < 0, IndexError, roi::bad_batch_message(who, k, out[k].r[0], batch));
        out[k].image = static_cast<size_t>(b);
    }
    return out;
}

// A roi's taps as its forward lists them (roi_bins_hwy.h's RoiTapList, owned).
struct RoiTaps {
    std::vector<int32_t> pix;
    std::vector<float> w;
    std::vector<uint32_t> sample_end, bin_end;
    std::vector<int32_t> sample_arg;

    void clear() {
        pix.clear();
        w.clear();
        sample_end.clear();
        sample_arg.clear();
        bin_end.clear();
    }
    void tap(int64_t pixel, float weight) {
        pix.push_back(static_cast<int32_t>(pixel));
        w.push_back(weight);
    }
    // `arg`: what index reports of the sample when it is its bin's largest.
    void end_sample(int64_t arg) {
        sample_end.push_back(static_cast<uint32_t>(pix.size()));
        sample_arg.push_back(static_cast<int32_t>(arg));
    }
    void end_bin() { bin_end.push_back(static_cast<uint32_t>(sample_end.size())); }
    RoiTapList list() const {
        return {pix.data(),        w.data(),       sample_end.data(),
                sample_arg.data(), bin_end.data(), bin_end.size()};
    }
};

inline size_t channel_blocks(size_t channels) {
    return (channels + kRoiChannelBlock - 1) / kRoiChannelBlock * kRoiChannelBlock;
}

// The forward of ROIAlign and ROIPooling: src made channels-last once (roi_bins_hwy.h), then the
// rois across OpenMP threads, build(k, taps) listing roi k's taps, bin by bin row-major over
// dst's (PH, PW); dst gets each bin's value and index its largest sample's arg (MAX) or -1.
// `work` is the loop's total.
template <class Build>
void roi_forward(const TensorND& src, const std::vector<RoiRow>& rois, const TensorND& dst,
                 const TensorND& index, bool max, size_t work, Build&& build) {
    const size_t channels = src.layout[1];
    const size_t pixels = src.layout[2] * src.layout[3];
    const size_t cp = channel_blocks(channels);
    const size_t pw_n = dst.layout[3], bins = dst.layout[2] * pw_n;
    const Nchw dp(dst.layout), ip(index.layout);
    auto* out = static_cast<float*>(dst.raw_ptr());
    auto* idx = static_cast<int32_t*>(index.raw_ptr());
    // Each bin's offset in a plane of dst and of index, once (a division per element and channel
    // cost as much as the pooling).
    std::vector<ptrdiff_t> d_at(bins), i_at(bins);
    for (size_t bin = 0; bin < bins; ++bin) {
        auto p = static_cast<int64_t>(bin / pw_n), q = static_cast<int64_t>(bin % pw_n);
        d_at[bin] = dp.at(p, q);
        i_at[bin] = ip.at(p, q);
    }
    // Whether a (PH, PW) plane is row-major and dense, channels a non-negative stride apart.
    auto dense = [&](const Nchw& l) {
        return l.s[3] == 1 && l.s[2] == static_cast<ptrdiff_t>(pw_n) && l.s[1] >= 0;
    };
    const ChannelsLast img(src, cp);
    parallel_ranges(rois.size(), work, kParallelGrain, [&](size_t b, size_t e) {
        RoiTaps taps;
        std::vector<float> val(bins * cp);
        std::vector<int32_t> arg(bins * cp);
        for (size_t k = b; k < e; ++k) {
            taps.clear();
            build(k, taps);
            roi_bins_f32(img.data() + rois[k].image * pixels * cp, cp, taps.list(), max, val.data(),
                         arg.data());
            // (bin, channel) to (channel, bin): 8 x 8 register blocks where a plane is dense.
            if (dense(dp))
                transpose_tile_u32(reinterpret_cast<const uint32_t*>(val.data()), cp, bins,
                                   channels, reinterpret_cast<uint32_t*>(out + dp.plane(k, 0)),
                                   dp.s[1], false);
            if (dense(ip))
                transpose_tile_u32(reinterpret_cast<const uint32_t*>(arg.data()), cp, bins,
                                   channels, reinterpret_cast<uint32_t*>(idx + ip.plane(k, 0)),
                                   ip.s[1], false);
            for (size_t c = 0; c < channels && !(dense(dp) && dense(ip)); ++c) {
                float* o = out + dp.plane(k, c);
                int32_t* a = idx + ip.plane(k, c);
                for (size_t bin = 0; bin < bins; ++bin) {
                    o[d_at[bin]] = val[bin * cp + c];
                    a[i_at[bin]] = arg[bin * cp + c];
                }
            }
        }
    });
}

// Calls check(k, ph, pw, v) with every value v of a backward's index tensor (K, C, PH, PW),
// before any thread starts: the error naive gives for a bad index.
template <class Check>
void check_index(const TensorND& index, Check&& check) {
    const Nchw ip(index.layout);
    const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
    for (size_t k = 0; k < index.layout[0]; ++k)
        for (size_t c = 0; c < index.layout[1]; ++c)
            for (size_t ph = 0; ph < index.layout[2]; ++ph)
                for (size_t pw = 0; pw < index.layout[3]; ++pw)
                    check(k, ph, pw,
                          idx[ip.plane(k, c) +
                              ip.at(static_cast<int64_t>(ph), static_cast<int64_t>(pw))]);
}

// The rois of each image, in order: the backward's planes add them in naive's order.
inline std::vector<std::vector<size_t>> rois_of_images(const std::vector<RoiRow>& rois,
                                                       size_t batch) {
    std::vector<std::vector<size_t>> of(batch);
    for (size_t k = 0; k < rois.size(); ++k)
        of[rois[k].image].push_back(k);
    return of;
}

}  // namespace neomeg::dnn::x86::roi_x86
