// OpenCV's border modes and the bilinear taps of a source point, shared by the warps that sample
// an image at arbitrary points (WarpPerspective, Remap). Their params each carry a BorderMode
// enum with the members REPLICATE, REFLECT, REFLECT_101, WRAP and CONSTANT; the functions take
// any such enum.
#pragma once

#include <cmath>
#include <cstdint>

namespace neomeg::dnn::naive::border {

inline int64_t floor_mod(int64_t a, int64_t m) {
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

// Where position p of an axis of `len` (> 0) elements reads; -1 means the constant (CONSTANT).
template <class Mode>
int64_t index(Mode mode, int64_t p, int64_t len) {
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

inline int64_t clamp_far(double v) {
    return static_cast<int64_t>(std::fmin(std::fmax(v, -kFar), kFar));
}

// A source point (x, y) and its four bilinear taps: rows floor(y) + {0, 1} and columns
// floor(x) + {0, 1}, each folded into the image by the border mode (-1: the constant).
struct BilinearPoint {
    bool finite = false;
    double x = 0, y = 0;
    double fx = 0, fy = 0;  // x - floor(x), y - floor(y)
    int64_t row[2] = {}, col[2] = {};

    double weight(int i, int j) const { return (i ? fy : 1 - fy) * (j ? fx : 1 - fx); }
};

template <class Mode>
BilinearPoint bilinear_point(Mode mode, double x, double y, int64_t ih, int64_t iw) {
    BilinearPoint s;
    s.x = x;
    s.y = y;
    s.finite = std::isfinite(x) && std::isfinite(y);
    if (!s.finite)
        return s;
    double x0 = std::floor(x), y0 = std::floor(y);
    s.fx = x - x0;
    s.fy = y - y0;
    for (int k = 0; k < 2; ++k) {
        s.row[k] = index(mode, clamp_far(y0) + k, ih);
        s.col[k] = index(mode, clamp_far(x0) + k, iw);
    }
    return s;
}

}  // namespace neomeg::dnn::naive::border
