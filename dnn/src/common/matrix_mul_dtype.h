// The dtype rule shared by MatrixMul, BatchedMatrixMul and Dot.
#pragma once

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn {

inline constexpr const char* kMatmulDtypesDoc =
        "both float32, float16, bfloat16, int8, int16 or int32";

// Floats keep their dtype; integers widen to int32 like MegDNN's int8 x int8 -> int32.
inline bool matmul_out_dtype(DType a, DType b, DType& out) {
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
