// The per-element formulas of FakeQuant, TQT and LSQ and of their gradients, shared by the naive
// and CUDA kernels so both round the same way. They compute in float, as MegEngine's kernels do
// (its results are the reference), and round half away from zero (roundf).
// Header-only and free of NeoMeg headers so that CUDA kernels can include it.
#pragma once

#include <cmath>

#include "src/common/host_device.h"

namespace neomeg::dnn::fake_quant {

inline constexpr float kLn2 = 0.693147180559945309f;

struct Range {
    float qmin, qmax;
};

struct Grads {
    float src, scale;
};

NM_HOST_DEVICE float clamp(float v, Range r) {
    return fmaxf(fminf(v, r.qmax), r.qmin);
}

NM_HOST_DEVICE float fake_quant(float x, float scale, float zero_point, Range r) {
    float q = clamp(roundf(x / scale) + zero_point, r);
    return (q - zero_point) * scale;
}

// Straight through inside the range, zero where the forward clamps.
NM_HOST_DEVICE float fake_quant_grad(float dy, float x, float scale, float zero_point, Range r) {
    float q = roundf(x / scale) + zero_point;
    return q <= r.qmax && q >= r.qmin ? dy : 0.f;
}

// `log2_scale` is TQT's parameter: the step is 2^log2_scale.
NM_HOST_DEVICE float tqt(float x, float log2_scale, Range r) {
    float t = powf(2.f, log2_scale);
    return clamp(roundf(x / t), r) * t;
}

NM_HOST_DEVICE Grads tqt_grad(float dy, float x, float log2_scale, Range r) {
    float t = powf(2.f, log2_scale);
    float scaled = x / t;
    float rounded = clamp(roundf(scaled), r);
    bool clipped = scaled < r.qmin - 0.5f || scaled > r.qmax + 0.5f;
    float ds = clipped ? rounded : rounded - scaled;
    return {clipped ? 0.f : dy, dy * ds * t * kLn2};
}

NM_HOST_DEVICE float lsq(float x, float scale, float zero_point, Range r) {
    float q = roundf(clamp(x / scale + zero_point, r));
    return (q - zero_point) * scale;
}

NM_HOST_DEVICE Grads lsq_grad(float dy, float x, float scale, float zero_point, float grad_scale,
                              Range r) {
    float v = x / scale + zero_point;
    bool small = v<r.qmin, big = v> r.qmax;
    float ds = small ? r.qmin : big ? r.qmax : roundf(v) - v;
    return {small || big ? 0.f : dy, ds * grad_scale * dy};
}

}  // namespace neomeg::dnn::fake_quant
