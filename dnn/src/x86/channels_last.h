// An NCHW float32 tensor copied channels-last, for the x86 kernels whose taps read every channel
// of a pixel at once as vectors (ROIAlign, ROIPooling, DeformablePSROIPooling, the Remap and
// WarpPerspective forwards).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "neomeg/dnn/tensor.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"
#include "src/x86/transpose_hwy.h"

namespace neomeg::dnn::x86 {

// src (N, C, H, W) float32 of any strides made channels-last: pixel p of image n has its channels
// at img + (n * H * W + p) * cp, cp a number of lanes at least the channels (the ROI kernels'
// kRoiChannelBlock multiple, the warp forward's), the lanes past them zero. Rows of unit column
// stride turn in 8 x 8 register blocks (transpose_hwy.h): the copy one element at a time, each a
// store 4 * cp bytes from the last, took a third of the bench's ROIPooling forward. The buffer is
// not zeroed first (only the lanes past the channels are).
class ChannelsLast {
public:
    ChannelsLast(const TensorND& src, size_t cp) {
        const size_t n_img = src.layout[0], channels = src.layout[1];
        const size_t h = src.layout[2], w = src.layout[3];
        const Nchw sp(src.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        m_img = std::make_unique_for_overwrite<float[]>(n_img * h * w * cp);
        const bool rows = sp.s[3] == 1 && sp.s[1] >= 0;
        parallel_ranges(n_img * h, n_img * h * w * cp, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t n = u / h, y = u % h;
                float* d = m_img.get() + u * w * cp;
                const float* s = in + sp.plane(n, 0) + sp.at(static_cast<int64_t>(y), 0);
                if (rows && channels)
                    transpose_tile_u32(reinterpret_cast<const uint32_t*>(s),
                                       static_cast<size_t>(sp.s[1]), channels, w,
                                       reinterpret_cast<uint32_t*>(d), static_cast<ptrdiff_t>(cp),
                                       false);
                else
                    for (size_t c = 0; c < channels; ++c)
                        for (size_t x = 0; x < w; ++x)
                            d[x * cp + c] = s[static_cast<ptrdiff_t>(c) * sp.s[1] +
                                              static_cast<ptrdiff_t>(x) * sp.s[3]];
                for (size_t x = 0; x < w && channels < cp; ++x)
                    std::fill(d + x * cp + channels, d + (x + 1) * cp, 0.f);
            }
        });
    }
    const float* data() const { return m_img.get(); }

private:
    std::unique_ptr<float[]> m_img;
};

}  // namespace neomeg::dnn::x86
