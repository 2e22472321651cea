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
// bfloat16: the calls plan_in_float32 takes.
bool is_lowp_call(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs);

// A plan that runs `make`'s plan for the float32 versions of these layouts between the
// conversions, or nullptr where `make` declines them too. The call must be is_lowp_call's.
std::unique_ptr<Plan> plan_in_float32(std::span<const TensorLayout> inputs,
                                      std::span<const TensorLayout> outputs, const MakePlan& make);

}  // namespace neomeg::dnn::x86
