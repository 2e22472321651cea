// Checks shared by the layout rules of the normalisation, softmax, dropout and RNG operators.
// They live outside the operator classes, so they report through NM_OP_REQUIRE.
#pragma once

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::norm_layout {

inline void check_count(const OperatorBase& op, std::span<const TensorLayout> inputs,
                        size_t expected) {
    NM_OP_REQUIRE(op, ShapeError, inputs.size() == expected, "expects ", expected, " inputs, got ",
                  inputs.size());
}

inline void check_float(const OperatorBase& op, const TensorLayout& l, const char* what) {
    NM_OP_REQUIRE(op, DTypeError, l.dtype.is_float(), what, " ", l.to_string(),
                  " is not a float dtype (float32, float16, bfloat16)");
}

inline void check_same_shape(const OperatorBase& op, const TensorLayout& a, const char* a_name,
                             const TensorLayout& b, const char* b_name) {
    NM_OP_REQUIRE(op, ShapeError, a.eq_shape(b), a_name, " ", a.to_string(), " and ", b_name, " ",
                  b.to_string(), " differ in shape");
}

inline void check_same_dtype(const OperatorBase& op, const TensorLayout& a, const char* a_name,
                             const TensorLayout& b, const char* b_name) {
    NM_OP_REQUIRE(op, DTypeError, a.dtype == b.dtype, a_name, " ", a.to_string(), " and ", b_name,
                  " ", b.to_string(), " differ in dtype");
}

// The shape of `s` without its trailing `n` axes (a scalar when none remain).
inline TensorShape leading(const TensorShape& s, size_t n) {
    TensorShape r;
    r.ndim = s.ndim - n;
    for (size_t i = 0; i < r.ndim; ++i)
        r[i] = s[i];
    return r;
}

// The trailing `n` axes of `s`.
inline TensorShape trailing(const TensorShape& s, size_t n) {
    TensorShape r;
    r.ndim = n;
    for (size_t i = 0; i < n; ++i)
        r[i] = s[s.ndim - n + i];
    return r;
}

}  // namespace neomeg::dnn::norm_layout
