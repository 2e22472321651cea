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

// Validates src (N, IC, IH, IW), filter (OC, IC/group, FH, FW), offset (N, 2*dg*FH*FW, OH, OW) and
// mask (N, dg*FH*FW, OH, OW), one float dtype, and the param; errors name `op`.
DeformableGeometry deformable_conv_geometry(const OperatorBase& op, const param::DeformableConv& p,
                                            const TensorLayout& src, const TensorLayout& filter,
                                            const TensorLayout& offset, const TensorLayout& mask);

}  // namespace neomeg::dnn
