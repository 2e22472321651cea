// The 0-d operand a Python scalar becomes in `x + 1.0`, F.clip(x, 0, 1) and the other elemwise
// calls (fast_apply.cpp's elemwise_direct).
#pragma once

#include <cstdint>

#include "neomeg/imperative/tensor.h"

namespace neomeg::python::fast {

// A 0-d tensor of `dt` holding the bytes `bits` (a float32's or an int32's) on `cn`. Host
// memory is kept per thread by (dtype, bits, comp node) while no trace records and DTR is off:
// made per call it cost 0.5 us, a third of a same-shape Elemwise. Only an operand: an Elemwise
// never writes its inputs nor returns them, and tensors are values.
imperative::Tensor scalar_operand(uint32_t bits, dnn::DType dt, CompNode cn);

}  // namespace neomeg::python::fast
