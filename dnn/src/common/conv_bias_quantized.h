// ConvBias on quantized dtypes (conv_bias.cpp has the dtype rule): the geometry, which the shared
// rule (convolution_geometry.h) computes for float dtypes only.
#pragma once

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

// The geometry of a ConvBias whose quantized src and filter deduce_layout has accepted.
ConvGeometry quantized_conv_geometry(const ConvBias& op, const TensorLayout& src,
                                     const TensorLayout& filter);

}  // namespace neomeg::dnn
