// The pooled bins of one roi over all channels at once (Highway, the instruction set chosen at
// run time), for ROIAlign and ROIPooling: the image is channels-last (pixel p's channels at
// img + p * cp, cp a multiple of kRoiChannelBlock, the lanes past the channels zero), so every
// tap is one vector load per block of channels. A roi is a list of weighted taps grouped into
// samples, the samples into bins: ROIAlign's samples are bilinear points (up to four taps),
// ROIPooling's are single pixels of weight 1. A sample's value is its taps' products summed in
// float32 in order (the first product exact: a one-tap sample of weight 1 is its pixel's bits);
// a bin's value is its samples' mean (summed in float32 in order) or their maximum by naive's
// rule (the first sample taken, a later one only when greater: a NaN first stays, a later NaN
// never wins); a bin without samples is 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

inline constexpr size_t kRoiChannelBlock = 16;  // the widest vector of float32 (AVX-512)

// Tap t reads pixel pix[t] with weight w[t]; sample q's taps end at sample_end[q] (they start
// where sample q - 1's end), bin b's samples at bin_end[b]; sample_arg[q] is what index reports
// of sample q when it is its bin's largest.
struct RoiTapList {
    const int32_t* pix;
    const float* w;
    const uint32_t* sample_end;
    const int32_t* sample_arg;
    const uint32_t* bin_end;
    size_t bins;
};

// val[b * cp + c]: bin b's value in channel c; arg[b * cp + c]: the sample_arg of its largest
// sample (max), or -1 (mean, and a bin without samples).
void roi_bins_f32(const float* img, size_t cp, const RoiTapList& t, bool max, float* val,
                  int32_t* arg);

}  // namespace neomeg::dnn::x86
