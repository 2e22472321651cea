// Elemwise on float16 and bfloat16 (every input and dst of the one 16-bit dtype), for the modes
// the float32 kernels compute. The hot modes run in one pass (elemwise_lowp_hwy.h); for the others
// a run is cut into chunks that fit in L1, each chunk's operands are
// widened into float32 buffers (TypeCvt's vector conversions, exact), the float32 kernel runs on
// them, and its result is rounded to the 16-bit dtype (TypeCvt's rounding to nearest even). Naive
// computes in double from the same exact float values, rounds to float, then to the 16-bit dtype
// with the same rounding; since the float32 kernels give naive's float bits, the result is naive's
// bit for bit (NaN's sign aside: both give the dtype's one quiet NaN).
#pragma once

#include <cstddef>

#include "src/x86/elemwise_hwy.h"

namespace neomeg::dnn::x86 {

// Whether elemwise_lowp_run computes `mode` with every input of dtype `data` and dst of `dst`.
bool elemwise_lowp_supported(elemwise::Mode mode, DType data, DType dst);

// dst[i] = mode(srcs[0][i], ...) for i in [0, n), in the 16-bit dtype `dt`; srcs has the mode's
// arity and the dtype and mode are a pair elemwise_lowp_supported accepts.
void elemwise_lowp_run(elemwise::Mode mode, DType dt, const ElemwiseSrc* srcs, void* dst, size_t n);

}  // namespace neomeg::dnn::x86
