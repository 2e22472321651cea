// OpenCV's border modes: where a position outside an axis reads, for the kernels that sample an
// image at arbitrary points (WarpPerspective, Remap, ROIAlign's and ROIPooling's bins) on every
// backend. Their params each carry a BorderMode enum with the members REPLICATE, REFLECT,
// REFLECT_101, WRAP and CONSTANT (CUDA's kernel arguments a WarpBorder of the same names); the
// functions take any such enum.
#pragma once

#include <cmath>
#include <cstdint>

#include "src/common/host_device.h"

namespace neomeg::dnn::border {

NM_HOST_DEVICE int64_t floor_mod(int64_t a, int64_t m) {
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

// Where position p of an axis of `len` (> 0) elements reads; -1 means the constant (CONSTANT).
template <class Mode>
NM_HOST_DEVICE int64_t index(Mode mode, int64_t p, int64_t len) {
    if (p >= 0 && p < len)
        return p;
    switch (mode) {
        case Mode::REPLICATE:
            return p < 0 ? 0 : len - 1;
        case Mode::REFLECT: {
            int64_t q = floor_mod(p, 2 * len);
            return q < len ? q : 2 * len - 1 - q;
        }
        case Mode::REFLECT_101: {
            if (len == 1)
                return 0;
            int64_t q = floor_mod(p, 2 * len - 2);
            return q < len ? q : 2 * len - 2 - q;
        }
        case Mode::WRAP:
            return floor_mod(p, len);
        case Mode::CONSTANT:
            break;
    }
    return -1;
}

// Beyond this, a coordinate is clamped: every tap is outside any image a tensor can hold, so
// only the border mode's rule applies, and the int64 conversion stays defined.
constexpr double kFar = 1099511627776.0;  // 2^40

NM_HOST_DEVICE int64_t clamp_far(double v) {
    return static_cast<int64_t>(fmin(fmax(v, -kFar), kFar));
}

}  // namespace neomeg::dnn::border
