// OpenCV's border modes on the device, shared by the kernels that sample an image at arbitrary
// points (warp_perspective.cu, remap.cu): naive's src/naive/border.h.
#pragma once

#include <cstdint>

#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda::kern {

__device__ __forceinline__ int64_t floor_mod(int64_t a, int64_t m) {
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

// Where position p of an axis of `len` (> 0) elements reads; -1 means the constant.
__device__ __forceinline__ int64_t border_index(WarpBorder mode, int64_t p, int64_t len) {
    if (p >= 0 && p < len)
        return p;
    switch (mode) {
        case WarpBorder::REPLICATE:
            return p < 0 ? 0 : len - 1;
        case WarpBorder::REFLECT: {
            int64_t q = floor_mod(p, 2 * len);
            return q < len ? q : 2 * len - 1 - q;
        }
        case WarpBorder::REFLECT_101: {
            if (len == 1)
                return 0;
            int64_t q = floor_mod(p, 2 * len - 2);
            return q < len ? q : 2 * len - 2 - q;
        }
        case WarpBorder::WRAP:
            return floor_mod(p, len);
        case WarpBorder::CONSTANT:
            break;
    }
    return -1;
}

// naive's border::clamp_far: beyond 2^40 every tap is outside any image, and the int64
// conversion stays defined.
__device__ __forceinline__ int64_t clamp_far(double v) {
    const double far = 1099511627776.0;
    return static_cast<int64_t>(fmin(fmax(v, -far), far));
}

}  // namespace neomeg::dnn::cuda::kern
