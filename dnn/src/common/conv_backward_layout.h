// The grad layouts of ConvolutionBackwardData and ConvolutionBackwardFilter (convolution.cpp),
// shared with their blocked forms (channel_blocked_training.cpp), which apply them to the plain
// shapes of their blocked tensors. `preset` is the caller's grad shape (ndim 0: none); errors name
// `op`.
#pragma once

#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

TensorLayout conv_backward_data_grad(const OperatorBase& op, const ConvArgs& args,
                                     const TensorLayout& filter, const TensorLayout& diff,
                                     const TensorLayout& preset);
TensorLayout conv_backward_filter_grad(const OperatorBase& op, const ConvArgs& args,
                                       const TensorLayout& src, const TensorLayout& diff,
                                       const TensorLayout& preset);

}  // namespace neomeg::dnn
