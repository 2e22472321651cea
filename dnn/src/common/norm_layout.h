// Checks shared by the layout rules of the normalisation, softmax, dropout and RNG operators.
// They live outside the operator classes, so they build the same "<op>(<params>): " message
// prefix as OperatorBase::require from the public param_str().
#pragma once

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::norm_layout {

template <class Err = ShapeError, class... Args>
void check(const OperatorBase& op, bool cond, Args&&... parts) {
    if (!cond)
        throw Err(str_cat(op.param_str(), ": ", std::forward<Args>(parts)...));
}

inline void check_count(const OperatorBase& op, std::span<const TensorLayout> inputs,
                        size_t expected) {
    check(op, inputs.size() == expected, "expects ", expected, " inputs, got ", inputs.size());
}

inline void check_float(const OperatorBase& op, const TensorLayout& l, const char* what) {
    check<DTypeError>(op, l.dtype.is_float(), what, " ", l.to_string(),
                      " is not a float dtype (float32, float16, bfloat16)");
}

inline void check_same_shape(const OperatorBase& op, const TensorLayout& a, const char* a_name,
                             const TensorLayout& b, const char* b_name) {
    check(op, a.eq_shape(b), a_name, " ", a.to_string(), " and ", b_name, " ", b.to_string(),
          " differ in shape");
}

inline void check_same_dtype(const OperatorBase& op, const TensorLayout& a, const char* a_name,
                             const TensorLayout& b, const char* b_name) {
    check<DTypeError>(op, a.dtype == b.dtype, a_name, " ", a.to_string(), " and ", b_name, " ",
                      b.to_string(), " differ in dtype");
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
