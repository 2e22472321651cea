// Vectorised TypeCvt over one dense run (Highway, the instruction set chosen at run time), bit for
// bit what naive gives (dnn/src/naive/type_cvt.h): float32 <-> float16 and bfloat16 round to
// nearest even with Eigen's NaN (a quiet NaN keeping the sign), float16 <-> bfloat16 through the
// exact float32, int32 <-> float32 (float -> int truncates, saturates, NaN -> 0), the small
// integers and bool -> float32, float32 -> bool (!= 0, NaN -> true).
#pragma once

#include <cstddef>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn::x86 {

// Whether type_cvt_run converts src to dst.
bool type_cvt_supported(DType src, DType dst);

// dst[i] = src[i] converted, for i in [0, n); the dtypes are a pair type_cvt_supported accepts.
void type_cvt_run(DType src, DType dst, const void* s, void* d, size_t n);

}  // namespace neomeg::dnn::x86
