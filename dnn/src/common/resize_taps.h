// Which source elements, with which weights, a Resize output position reads along one axis: the
// one rule of naive, x86 and the CUDA kernels (a header without the standard library's state so
// that device code shares it).
//   NEAREST: src[floor(o * in / out)] (integer arithmetic, so exact), as MegDNN.
//   LINEAR:  pixel centres, src = (o + 0.5) * in / out - 0.5 clamped at 0, as MegEngine's
//            F.vision.interpolate and PyTorch; with align_corners src = o * (in - 1) / (out - 1).
//   CUBIC:   MegDNN's (OpenCV's) bicubic: src = (o + 0.5) * in / out - 0.5 unclamped, the four
//            elements floor(src) - 1 .. floor(src) + 2 clamped into the axis (edge replication),
//            weighted by Keys' kernel with a = -0.75; no align_corners (MegEngine refuses it).
#pragma once

#include <cstdint>

#include "src/common/host_device.h"

namespace neomeg::dnn::resize {

// The order of param::Resize::InterpolationMode (checked where the param is converted).
enum class Mode : uint32_t { NEAREST, LINEAR, CUBIC };

// Output position o reads sum over k < n of w[k] * src[idx[k]]. The taps come in ascending source
// order before clamping, which is the order every kernel sums them in.
struct AxisTaps {
    int64_t idx[4];
    double w[4];
    int n;
};

NM_HOST_DEVICE int64_t clamp_index(int64_t i, int64_t in) {
    return i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
}

// Floor of a double whose magnitude fits int64 (device code has no std::floor overload set).
NM_HOST_DEVICE int64_t floor_index(double x) {
    auto i = static_cast<int64_t>(x);
    return static_cast<double>(i) > x ? i - 1 : i;
}

NM_HOST_DEVICE AxisTaps axis_taps(Mode mode, bool align_corners, int64_t in, int64_t out,
                                  int64_t o) {
    AxisTaps t{};
    if (mode == Mode::NEAREST) {
        t.n = 1;
        t.idx[0] = clamp_index(o * in / out, in);
        t.w[0] = 1.0;
        return t;
    }
    // half-pixel centres: (o + 0.5) * in / out - 0.5
    const double centre =
            (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) -
            0.5;
    if (mode == Mode::CUBIC) {
        constexpr double a = -0.75;
        const double src = centre;
        const int64_t i = floor_index(src);
        const double f = src - static_cast<double>(i), g = 1.0 - f;
        t.n = 4;
        t.w[0] = ((a * (f + 1) - 5 * a) * (f + 1) + 8 * a) * (f + 1) - 4 * a;
        t.w[1] = ((a + 2) * f - (a + 3)) * f * f + 1;
        t.w[2] = ((a + 2) * g - (a + 3)) * g * g + 1;
        t.w[3] = 1.0 - t.w[0] - t.w[1] - t.w[2];
        for (int k = 0; k < 4; ++k)
            t.idx[k] = clamp_index(i - 1 + k, in);
        return t;
    }
    double src;
    if (align_corners) {
        src = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) /
                                static_cast<double>(out - 1)
                      : 0.0;
    } else {
        src = centre > 0.0 ? centre : 0.0;
    }
    const int64_t i0 = clamp_index(static_cast<int64_t>(src), in);  // src >= 0: truncation floors
    const double w = src - static_cast<double>(i0);
    t.n = 2;
    t.idx[0] = i0;
    t.idx[1] = clamp_index(i0 + 1, in);
    t.w[0] = 1 - w;
    t.w[1] = w;
    return t;
}

}  // namespace neomeg::dnn::resize
