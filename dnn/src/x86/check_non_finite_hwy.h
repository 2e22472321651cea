// Vectorised search for a NaN or infinity in one dense run of float32, float16 or bfloat16
// (Highway, the instruction set chosen at run time): a value is non-finite when its exponent bits
// are all ones, which integer lanes test without a float comparison.
#pragma once

#include <cstddef>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn::x86 {

// Whether any of the n elements of dtype dt at p is NaN or infinite; dt is a float dtype.
bool has_non_finite(DType dt, const void* p, size_t n);

}  // namespace neomeg::dnn::x86
