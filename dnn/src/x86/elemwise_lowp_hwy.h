// The hot Elemwise modes on float16 and bfloat16 in one pass (Highway, the instruction set chosen
// at run time): each vector of 16-bit operands is widened to float32 (exactly), the mode's single
// float operation runs (the float32 kernels' formula), and the result is rounded to the 16-bit
// dtype as TypeCvt and naive round, so the result is naive's bit for bit. The modes: ADD, SUB, MUL,
// MAX, MIN, NEGATE, ABS, RELU and SWITCH_GT0 (what training steps run on activations); the others
// take elemwise_lowp.cpp's chunked path through the float32 kernels.
#pragma once

#include <cstddef>

#include "src/x86/elemwise_hwy.h"

namespace neomeg::dnn::x86 {

// dst[i] = mode(srcs[0][i], ...) for i in [0, n) with every operand and dst of dtype dt (float16 or
// bfloat16); returns false, touching nothing, for a mode not listed above.
bool elemwise_lowp_fused(elemwise::Mode mode, DType dt, const ElemwiseSrc* srcs, void* dst,
                         size_t n);

}  // namespace neomeg::dnn::x86
