// Vectorised TypeCvt to and from the quantized dtypes (Highway, the instruction set chosen at run
// time), bit for bit naive's rules (dnn/src/naive/type_cvt.h): a quantized source's value is
// float(v - zero_point) * scale in float32; a quantized destination gets round(value / scale),
// halves away from zero, plus its zero point, saturated, NaN -> zero point. The pairs: float32 and
// QuantizedS8, Quantized8Asymm and QuantizedS32 each way, and quantized to quantized
// (requantising a ConvBias's QuantizedS32 sums to 8 bits among them).
#pragma once

#include <cstddef>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn::x86 {

// Whether quantized_cvt_run converts src to dst.
bool quantized_cvt_supported(DType src, DType dst);

// dst[i] = src[i] converted, for i in [0, n); a pair quantized_cvt_supported accepts.
void quantized_cvt_run(DType src, DType dst, const void* s, void* d, size_t n);

}  // namespace neomeg::dnn::x86
