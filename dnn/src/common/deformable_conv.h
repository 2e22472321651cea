// Shape rules of the deformable convolutions (DeformableConvForward and its two gradients), shared
// by their layout rules and kernels.
#pragma once

#include "neomeg/dnn/params/convolution.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

// A 2-D convolution's geometry (H and W in ConvGeometry's trailing dims 1 and 2) and the number of
// deformable groups, each IC / dg channels sharing offsets and masks.
struct DeformableGeometry {
    ConvGeometry conv;
    size_t dg = 1;

    size_t ih() const { return conv.in[1]; }
    size_t iw() const { return conv.in[2]; }
    size_t oh() const { return conv.out[1]; }
    size_t ow() const { return conv.out[2]; }
    size_t fh() const { return conv.k[1]; }
    size_t fw() const { return conv.k[2]; }
};

// MegEngine's bilinear rule for a sample point: a point with h <= -1, h >= H, w <= -1 or w >= W
// reads 0 (and has no slope); otherwise its four taps floor(h) + {0, 1} x floor(w) + {0, 1},
// those outside the plane reading 0. Shared by the naive and x86 kernels so both sample alike.
struct DeformSample {
    bool inside = false;
    long h0 = 0, w0 = 0;
    double lh = 0, lw = 0;  // h - h0, w - w0
};

inline DeformSample deform_locate(double h, double w, long H, long W) {
    DeformSample s;
    s.inside = h > -1 && w > -1 && h < static_cast<double>(H) && w < static_cast<double>(W);
    if (s.inside) {
        // floor of a point inside (-1, H): truncation, one less for the negative fractions (a
        // libm call per coordinate took a fifth of the x86 columns' time without SSE4.1).
        s.h0 = static_cast<long>(h);
        s.w0 = static_cast<long>(w);
        s.h0 -= static_cast<double>(s.h0) > h;
        s.w0 -= static_cast<double>(s.w0) > w;
        s.lh = h - static_cast<double>(s.h0);
        s.lw = w - static_cast<double>(s.w0);
    }
    return s;
}

// Validates src (N, IC, IH, IW), filter (OC, IC/group, FH, FW), offset (N, 2*dg*FH*FW, OH, OW) and
// mask (N, dg*FH*FW, OH, OW), one float dtype, and the param; errors name `op`.
DeformableGeometry deformable_conv_geometry(const OperatorBase& op, const param::DeformableConv& p,
                                            const TensorLayout& src, const TensorLayout& filter,
                                            const TensorLayout& offset, const TensorLayout& mask);

}  // namespace neomeg::dnn
