// 16-bit float operators that oneDNN has no fast kernel for on this CPU (float16 in oneDNN 2.6,
// which has no CPU float16 convolution, pooling or fast matmul; bfloat16 below AVX-512) run the
// kernel's float32 plan between conversions: the inputs are widened into dense float32 buffers in
// the workspace (type_cvt_hwy: vectorised, exact), the float32 primitive computes and accumulates
// in float32, and the outputs are rounded back (to nearest even, as naive rounds). oneDNN 2.6's
// own float16 reorders are scalar loops about a hundred times slower than this, so the widening
// is ours, not a converting reorder.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

using MakePlan = std::function<std::unique_ptr<Plan>(std::span<const TensorLayout>,
                                                     std::span<const TensorLayout>)>;

// Whether every tensor of the call (absent ones, ndim 0, aside) is float16, or every one is
// bfloat16: the calls plan_in_float32 takes. With `float32_operands`, the call must instead mix
// the two: 16-bit data beside float32 tensors (a batch normalisation's statistics and parameters
// under autocast; 16-bit statistics are not autocast's and stay with naive).
bool is_lowp_call(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs,
                  bool float32_operands = false);

// A plan that runs `make`'s plan for the float32 versions of these layouts between the
// conversions, or nullptr where `make` declines them too. The call must be is_lowp_call's; its
// float32 tensors pass through as they are. A channels-last tensor keeps its layout in float32
// (converted in memory order, so the float32 kernel runs on nhwc as the 16-bit one would have);
// other strided ones go through a dense row-major copy.
std::unique_ptr<Plan> plan_in_float32(std::span<const TensorLayout> inputs,
                                      std::span<const TensorLayout> outputs, const MakePlan& make);

}  // namespace neomeg::dnn::x86
