// Element conversion between dtypes, shared by TypeCvt and by the kernels that write a float param
// into a tensor of any dtype (Arange, Eye, Padding's border).
//
// The rules (tested in dnn/test/naive/type_cvt.cpp):
// - float -> integer truncates toward zero, like C++ and NumPy's astype; values beyond the integer
//   range saturate to its min/max (so -inf -> min, +inf -> max, -1.5 -> 0 for uint8) and NaN -> 0,
//   where C++ leaves the conversion undefined.
// - integer -> integer keeps the low bits (two's complement wrap, as NumPy's astype and C++20):
//   int8 -1 -> uint8 255, int32 300 -> int8 44.
// - anything -> bool is `!= 0` (NaN -> true); bool -> anything is 0 or 1.
// - -> float16/bfloat16 rounds to nearest even, once: float sources go through Eigen's conversion;
//   integers too wide for the target are first rounded to float32 "to odd", which makes Eigen's
//   second rounding give the correctly rounded result.
// - -> float32 rounds to nearest even; float16/bfloat16 -> float32 is exact.
// - quantized -> anything reads the value scale * (v - zero_point), computed in float32, and
//   converts it by the rules above (so quantized -> int8 truncates the value, as MegEngine does).
// - anything -> quantized is quantize_value below on the value as float32 (MegEngine's rounding:
//   half away from zero, then saturation; an integer source is its value, not its bits).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::naive {

// One element, read exactly: floats as double, integers and bool as int64.
struct Scalar {
    bool is_float = false;
    double f = 0;
    int64_t i = 0;

    static Scalar of_float(double v) { return {true, v, 0}; }
    static Scalar of_int(int64_t v) { return {false, 0, v}; }
};

// round(v * (1 / scale)) + zero_point, saturated to T: MegEngine's quantize, which multiplies by
// the float32 reciprocal its dtype holds rather than dividing (the two differ near halves:
// -10.65f / 0.1f rounds to -106, -10.65f * 10.0f to -107, MegEngine's), rounding in float32
// (std::round: half away from zero); NaN gives zero_point.
template <class T>
T quantize_value(float v, float scale, int32_t zero_point) {
    using L = std::numeric_limits<T>;
    const float inv_scale = 1.0f / scale;
    float q = std::round(v * inv_scale);
    if (std::isnan(q))
        return static_cast<T>(zero_point);
    double d = static_cast<double>(q) + zero_point;
    if (d <= static_cast<double>(L::min()))
        return L::min();
    if (d >= static_cast<double>(L::max()))
        return L::max();
    return static_cast<T>(d);
}

Scalar load_scalar(const TensorND& t, ptrdiff_t off);
// Writes s into the element at `off`, converted by the rules above.
void store_scalar(const TensorND& t, ptrdiff_t off, Scalar s);

}  // namespace neomeg::dnn::naive
