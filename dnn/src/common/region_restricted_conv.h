// Shape rules of the region-restricted convolutions (RegionRestrictedConvolutionForward and its
// two gradients), shared by their layout rules and kernels.
#pragma once

#include "neomeg/dnn/params/convolution.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

// Validates src (N, IC, IH, IW), filter (OC, IC/group, FH, FW), rin (N, IH, IW) and rout (N, OH,
// OW) (both int32 or both uint8) and the param; returns the 2-D geometry (H and W in
// ConvGeometry's trailing dims 1 and 2). Errors name `op`.
ConvGeometry region_restricted_geometry(const OperatorBase& op,
                                        const param::RegionRestrictedConvolution& p,
                                        const TensorLayout& src, const TensorLayout& filter,
                                        const TensorLayout& rin, const TensorLayout& rout);

}  // namespace neomeg::dnn
