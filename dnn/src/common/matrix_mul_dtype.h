// The dtype rule shared by MatrixMul, BatchedMatrixMul and Dot.
#pragma once

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn {

inline constexpr const char* kMatmulDtypesDoc =
        "both float32, float16, bfloat16, int8, int16, int32 or QuantizedS8 (any scales)";

// Floats keep their dtype; integers widen to int32 like MegDNN's int8 x int8 -> int32, and
// QuantizedS8 x QuantizedS8 gives QuantizedS32 of the product of the scales (MegEngine's).
inline bool matmul_out_dtype(DType a, DType b, DType& out) {
    if (a.enumv() == DTypeEnum::QuantizedS8 && b.enumv() == DTypeEnum::QuantizedS8) {
        out = DType::quantized_s32(a.scale() * b.scale());
        return true;
    }
    if (a != b)
        return false;
    switch (a.enumv()) {
        case DTypeEnum::Float32:
        case DTypeEnum::Float16:
        case DTypeEnum::BFloat16:
            out = a;
            return true;
        case DTypeEnum::Int8:
        case DTypeEnum::Int16:
        case DTypeEnum::Int32:
            out = dtype::Int32;
            return true;
        default:
            return false;
    }
}

}  // namespace neomeg::dnn
