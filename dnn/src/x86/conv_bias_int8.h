// ConvBias on quantized int8 (QuantizedS8 or Quantized8Asymm src, QuantizedS8 filter, QuantizedS32
// bias and dst): the exact integer GEMM of gemm_s16_hwy.h on B's rows packed from the image, a
// zero-point-padded copy of it or im2col rows, then bias and RELU saturated as naive's double sum
// is.
#pragma once

#include <memory>
#include <span>

#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The plan for a quantized ConvBias call, or nullptr where naive runs it: a non-contiguous filter
// or dst, a bias varying along spatial dims, an empty dst, or a kernel so large (icg * taps over
// 65793) that an int32 sum could overflow, where naive saturates.
std::unique_ptr<Plan> int8_conv_bias_plan(const ConvBias& op, std::span<const TensorLayout> in,
                                          const TensorLayout& dst);

}  // namespace neomeg::dnn::x86
