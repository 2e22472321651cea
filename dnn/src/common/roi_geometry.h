// Where ROIAlign samples and which pixels ROIPooling pools, from one roi row (batch index, x1,
// y1, x2, y2) read as double: shared by the naive kernels and the x86 ones, which precompute it
// once per roi instead of once per output element, so both take the same points and bins.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/border.h"

namespace neomeg::dnn::roi {

// One ROIAlign roi's bins in src pixels: bin (ph, pw) is sampled on an sh x sw grid of sub-bin
// centres.
struct AlignGrid {
    size_t image = 0;
    double y0 = 0, x0 = 0, bin_h = 0, bin_w = 0;
    uint32_t sh = 0, sw = 0;  // samples per bin, down and across

    double y(size_t ph, uint32_t iy) const { return y0 + bin_h * (ph + (iy + 0.5) / sh); }
    double x(size_t pw, uint32_t ix) const { return x0 + bin_w * (pw + (ix + 0.5) / sw); }
};

inline AlignGrid align_grid(const param::ROIAlign& p, const double r[5], size_t image) {
    AlignGrid g;
    g.image = image;
    double s = p.spatial_scale, off = p.offset;
    g.x0 = r[1] * s - off;
    g.y0 = r[2] * s - off;
    double w = std::max(r[3] * s - off - g.x0, 0.0), h = std::max(r[4] * s - off - g.y0, 0.0);
    g.bin_h = h / p.pooled_height;
    g.bin_w = w / p.pooled_width;
    // Sampling "densely" (0): about one sample per pixel of the bin, at least one.
    auto dense = [](double bin) { return static_cast<uint32_t>(std::max(1.0, std::ceil(bin))); };
    g.sh = p.sample_height ? p.sample_height : dense(g.bin_h);
    g.sw = p.sample_width ? p.sample_width : dense(g.bin_w);
    return g;
}

// The bilinear taps of a ROIAlign sample at one coordinate: pixels i0 and i0 + 1 with weights
// 1 - a and a, a pixel outside the image reading 0 (MegDNN's rule, so a sample fades to 0 across
// the border's last pixel).
struct AxisTap {
    int64_t i0;
    double a;
};

inline AxisTap axis_tap(double v) {
    double f = std::floor(v);
    return {border::clamp_far(f), v - f};
}

// One ROIPooling roi in whole pixels: its image, first row and column, and its extent.
struct PoolBox {
    size_t image = 0;
    int64_t h0 = 0, w0 = 0;
    float bin_h = 0, bin_w = 0;  // extent / pooled size, in float32 as MegDNN
};

// The bins are MegDNN's integer ones, computed in float32 as MegDNN computes them so that every
// bin holds the same pixels.
inline PoolBox pool_box(const param::ROIPooling& p, const double r[5], size_t image) {
    // round(float32(v) * scale) in float32, halves away from zero.
    auto corner = [&](double v) {
        return border::clamp_far(std::round(static_cast<float>(v) * p.scale));
    };
    PoolBox box;
    box.image = image;
    box.w0 = corner(r[1]);
    box.h0 = corner(r[2]);
    int64_t w = std::max(corner(r[3]) - box.w0 + 1, int64_t(1));
    int64_t h = std::max(corner(r[4]) - box.h0 + 1, int64_t(1));
    box.bin_h = static_cast<float>(h) / static_cast<float>(p.pooled_height);
    box.bin_w = static_cast<float>(w) / static_cast<float>(p.pooled_width);
    return box;
}

// The pixels of a bin clipped to the image: rows [hs, he), columns [ws, we).
struct PoolBin {
    int64_t hs, he, ws, we;
    int64_t count() const { return (he - hs) * (we - ws); }
};

// Bin (ph, pw)'s pixels along one axis: [start, end) within [0, len).
inline std::pair<int64_t, int64_t> pool_span(size_t i, float bin, int64_t first, int64_t len) {
    auto clip = [&](int64_t v) { return std::min(std::max(v, int64_t(0)), len); };
    int64_t lo = clip(border::clamp_far(std::floor(static_cast<float>(i) * bin)) + first);
    int64_t hi = clip(border::clamp_far(std::ceil(static_cast<float>(i + 1) * bin)) + first);
    return {lo, std::max(hi, lo)};
}

inline PoolBin pool_bin(const PoolBox& b, size_t ph, size_t pw, int64_t h, int64_t w) {
    auto [hs, he] = pool_span(ph, b.bin_h, b.h0, h);
    auto [ws, we] = pool_span(pw, b.bin_w, b.w0, w);
    return {hs, he, ws, we};
}

}  // namespace neomeg::dnn::roi
