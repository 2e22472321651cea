// The depthwise convolution's filter gradient on channel-blocked src and diff by our own loop
// (depthwise_blocked_hwy.h), for ConvolutionBackwardFilterBlocked.
#pragma once

#include <memory>

#include "src/common/convolution_geometry.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// A plan of (src, diff) -> grad for a depthwise convolution (group == channels, one filter each)
// of 1 or 2 spatial dims, float32, src and diff contiguous blocked tensors of one block; nullptr
// for anything else.
std::unique_ptr<Plan> depthwise_blocked_filter_plan(const ConvArgs& args, const TensorLayout& src,
                                                    const TensorLayout& diff,
                                                    const TensorLayout& grad);

}  // namespace neomeg::dnn::x86
