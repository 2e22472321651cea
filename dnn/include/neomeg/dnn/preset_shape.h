// The operators whose dst shape the caller presets from an input's value (ReshapeTo, BroadcastTo,
// TakePrefix: dnn/ops/defs/tensor_shape.py) check at run time that the value still says what dst
// was given, so a caller that read it wrong fails instead of copying the wrong elements. One rule
// for every place that runs them: the kernels, and the eager runtime where it views a forwarded
// input instead of running the kernel (forwarding.h).
#pragma once

#include "neomeg/dnn/op_type.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn {

// Throws ShapeError unless `value` (the int32 shape or count input, readable on the host) agrees
// with dst's shape: ReshapeTo's entries equal dst's dims or are -1; BroadcastTo's equal them;
// TakePrefix's count is dst's dim 0. ParamError for an operator that takes no preset shape.
void check_preset_shape(OpType type, const TensorND& value, const TensorLayout& dst);

}  // namespace neomeg::dnn
