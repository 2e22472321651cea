// Vectorised TypeCvt over one dense run (Highway, the instruction set chosen at run time), bit for
// bit what naive gives (dnn/src/naive/type_cvt.h), for every pair of the plain dtypes (float32,
// float16, bfloat16, int32, int16, int8, uint8, bool): floats round to nearest even with Eigen's
// NaN (a quiet NaN keeping the sign), integers go to a float by one correct rounding, a float
// truncates into an integer and saturates at its ends (NaN -> 0), integers wrap into narrower
// ones, and anything -> bool is != 0 (NaN -> true).
#pragma once

#include <cstddef>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn::x86 {

// Whether type_cvt_run converts src to dst.
bool type_cvt_supported(DType src, DType dst);

// dst[i] = src[i] converted, for i in [0, n); the dtypes are a pair type_cvt_supported accepts.
void type_cvt_run(DType src, DType dst, const void* s, void* d, size_t n);

}  // namespace neomeg::dnn::x86
