// Where DeformablePSROIPooling samples, in float32 exactly as MegDNN computes it (its skip and
// clamp tests and the part index of a bin flip on the last bit): shared by the naive, x86 and
// CUDA-side code. A roi (b, x1, y1, x2, y2) spans round(x1) s - 0.5 to (round(x2) + 1) s - 0.5;
// bin (ph, pw)'s samples start at its corner, moved by the part's offset times the roi's size.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn::psroi {

struct Roi {
    float x0 = 0, y0 = 0;        // the roi's corner
    float roi_w = 0, roi_h = 0;  // its size (at least 0.1)
    float bin_w = 0, bin_h = 0;  // a bin's
    float sub_w = 0, sub_h = 0;  // a sample step's
};

inline Roi roi_of(const param::DeformablePSROIPooling& p, float x1, float y1, float x2, float y2) {
    const float s = p.spatial_scale;
    Roi r;
    r.x0 = std::round(x1) * s - 0.5f;
    r.y0 = std::round(y1) * s - 0.5f;
    float xe = (std::round(x2) + 1.f) * s - 0.5f, ye = (std::round(y2) + 1.f) * s - 0.5f;
    r.roi_w = std::max(xe - r.x0, 0.1f);
    r.roi_h = std::max(ye - r.y0, 0.1f);
    r.bin_w = r.roi_w / static_cast<float>(p.pooled_w);
    r.bin_h = r.roi_h / static_cast<float>(p.pooled_h);
    r.sub_w = r.bin_w / static_cast<float>(p.sample_per_part);
    r.sub_h = r.bin_h / static_cast<float>(p.sample_per_part);
    return r;
}

// The part of bin ph along an axis of `pooled` bins: floor(ph / pooled * part_size) in float32.
inline int64_t part_of(size_t ph, uint32_t pooled, uint32_t part_size) {
    float v = static_cast<float>(ph) / static_cast<float>(pooled) * static_cast<float>(part_size);
    return static_cast<int64_t>(std::floor(v));
}

// The first sample of a bin along one axis: its corner plus the offset (trans value times
// trans_std, zero when no_trans) times the roi's size.
inline float bin_start(float corner, size_t bin, float bin_size, float offset, float roi_size) {
    return static_cast<float>(bin) * bin_size + corner + offset * roi_size;
}

// A sample point along one axis of `len` pixels: whether it is taken (at most half a pixel
// outside the image) and, if so, the clamped coordinate.
inline bool take(float v, int64_t len, float& clamped) {
    if (v < -0.5f || static_cast<double>(v) > static_cast<double>(len) - 0.5)
        return false;
    clamped = std::min(std::max(v, 0.f), static_cast<float>(len - 1));
    return true;
}

// The two taps of a clamped coordinate: pixels floor(v) and ceil(v) (the same pixel at an
// integer), the second's weight v - floor(v).
struct Taps {
    int64_t lo, hi;
    float a;
};
inline Taps taps_of(float v) {
    float f = std::floor(v);
    return {static_cast<int64_t>(f), static_cast<int64_t>(std::ceil(v)), v - f};
}

}  // namespace neomeg::dnn::psroi
