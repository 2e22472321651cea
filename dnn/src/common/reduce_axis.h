// Axis handling shared by the single-axis reductions and scans (Reduce, Argmax, Argmin, Cumsum).
#pragma once

#include <cstddef>
#include <cstdint>

#include "neomeg/dnn/layout.h"

namespace neomeg::dnn {

// Maps axis in [-ndim, ndim) to [0, ndim); false when out of range (always for a scalar).
inline bool normalize_axis(int32_t axis, size_t ndim, size_t& out) {
    int64_t a = axis < 0 ? int64_t{axis} + static_cast<int64_t>(ndim) : int64_t{axis};
    if (a < 0 || a >= static_cast<int64_t>(ndim))
        return false;
    out = static_cast<size_t>(a);
    return true;
}

// src's shape with `axis` set to 1, contiguous: the layout of a reduction's output.
inline TensorLayout reduced_layout(const TensorLayout& src, size_t axis, DType dtype) {
    TensorShape s = src;
    s[axis] = 1;
    return TensorLayout(s, dtype);
}

}  // namespace neomeg::dnn
