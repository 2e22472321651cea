// The depthwise convolution (group == input channels, each group one input channel and `mult`
// output channels) on plain NCHW / NCW float32 tensors, by our own loops rather than oneDNN: its
// fast depthwise kernels read only the blocked (nChw16c) layout, and reordering the activations
// in and out of it cost four times the convolution itself. Each channel's plane is read in place
// (depthwise_direct_hwy.h) or, where those loops decline, through a zero-padded copy in L1
// (depthwise_hwy.h), so the tensors are read and written once.
//
// Taken: float32, 1-D and 2-D, any stride, padding, dilation and channel multiplier, both modes,
// any strides of the N, C and H axes with unit stride along W (and any filter strides); one
// activation without unit stride along W (a channels-last view beside a plain partner) is copied
// through the workspace. The functions return nullptr for the rest (two channels-last
// activations: oneDNN's nhwc kernels read them in place), which convolution.cpp's oneDNN plans
// then take.
#pragma once

#include <memory>

#include "src/common/convolution_geometry.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

std::unique_ptr<Plan> depthwise_forward_plan(const ConvArgs& args, const TensorLayout& src,
                                             const TensorLayout& filter, const TensorLayout& dst);
std::unique_ptr<Plan> depthwise_backward_data_plan(const ConvArgs& args, const TensorLayout& filter,
                                                   const TensorLayout& diff,
                                                   const TensorLayout& grad);
std::unique_ptr<Plan> depthwise_backward_filter_plan(const ConvArgs& args, const TensorLayout& src,
                                                     const TensorLayout& diff,
                                                     const TensorLayout& grad);

}  // namespace neomeg::dnn::x86
