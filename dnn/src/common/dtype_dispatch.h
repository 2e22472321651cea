// Runs a generic lambda with the C++ element type of a runtime DType:
//   dispatch_dtype(layout.dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... });
#pragma once

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"

namespace neomeg::dnn {

template <class T>
struct TypeTag {
    using type = T;
};

// Every plain dtype. A quantized dtype is a DTypeError: its values are not its storage's, so a
// kernel that computes on them must say so (TypeCvt, ConvBias, MatrixMul); kernels that only move
// bytes dispatch on dt.storage() instead. A complex dtype is a DTypeError too: the few kernels that
// compute on it (Elemwise's ADD, SUB, MUL, NEGATE; the complex parts ops) test is_complex() first,
// and byte-moving kernels go by element size.
template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
    switch (dt.enumv()) {
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return f(TypeTag<t>{});
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, s, n) case DTypeEnum::e:
        NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
        throw UnsupportedDTypeError(
                str_cat("quantized dtype ", dt.full_name(), " is not supported by this operator"));
#define NM_CB(e, t, n) case DTypeEnum::e:
        NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
        throw UnsupportedDTypeError(
                str_cat("complex dtype ", dt.name(), " is not supported by this operator"));
    }
    throw DTypeError("invalid dtype");
}

// Float dtypes only; `who` names the operator in the DTypeError raised for any other dtype.
template <class F>
decltype(auto) dispatch_float(DType dt, const std::string& who, F&& f) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return f(TypeTag<dt_float32>{});
        case DTypeEnum::Float16:
            return f(TypeTag<dt_float16>{});
        case DTypeEnum::BFloat16:
            return f(TypeTag<dt_bfloat16>{});
        default:
            throw DTypeError(str_cat(who, ": dtype ", dt.name(), " is not supported (float only)"));
    }
}

// Float and integer dtypes, not bool.
template <class F>
decltype(auto) dispatch_numeric(DType dt, const std::string& who, F&& f) {
    if (dt.is_bool())
        throw DTypeError(str_cat(who, ": dtype bool is not supported"));
    return dispatch_dtype(dt, std::forward<F>(f));
}

}  // namespace neomeg::dnn
