// The Elemwise kernels of elemwise_int_hwy.cpp: int32 -> int32, float32 or int32 -> bool
// (comparisons, ISNAN, ISINF), bool -> bool (logical modes) and COND on float32 or int32 data.
// Called through elemwise_run
// (elemwise_hwy.h), which also holds the float32 modes.
#pragma once

#include <cstddef>

#include "src/x86/elemwise_hwy.h"

namespace neomeg::dnn::x86 {

// Computes the run as elemwise_run does and returns true, or returns false (touching nothing) for
// a mode and dtypes it does not cover; with n = 0 it only answers.
bool elemwise_int_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                      void* dst, size_t n);

}  // namespace neomeg::dnn::x86
