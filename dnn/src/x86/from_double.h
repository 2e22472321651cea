// A value computed in double written into an element of any dtype by naive's conversion rules
// (naive/type_cvt.h), so that x86 kernels computing in double (Arange, Linspace, Resize) give
// naive's bits: float32 rounds to nearest (beyond its range to infinity), float16/bfloat16 round
// once (through float32 rounded to odd), integers truncate and saturate with NaN -> 0, bool is
// != 0.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn::x86 {

inline float double_to_float(double d) {
    constexpr double kOverflow = 0x1.ffffffp+127;  // FLT_MAX + half an ulp, a tie that rounds up
    if (std::abs(d) >= kOverflow)
        return d > 0 ? std::numeric_limits<float>::infinity()
                     : -std::numeric_limits<float>::infinity();
    return static_cast<float>(d);
}

template <class T>
T from_double(double d) {
    if constexpr (std::is_same_v<T, dt_bool>) {
        return d != 0;
    } else if constexpr (std::is_same_v<T, dt_float32>) {
        return double_to_float(d);
    } else if constexpr (is_float_type_v<T>) {
        float f = double_to_float(d);
        if (!std::isnan(d) && !std::isinf(f) && static_cast<double>(f) != d) {
            if (std::abs(static_cast<double>(f)) > std::abs(d))
                f = std::nextafter(f, 0.0f);
            f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
        }
        return T(f);
    } else {
        using L = std::numeric_limits<T>;
        if (std::isnan(d))
            return 0;
        double t = std::trunc(d);
        if (t <= static_cast<double>(L::min()))
            return L::min();
        if (t >= static_cast<double>(L::max()))
            return L::max();
        return static_cast<T>(t);
    }
}

}  // namespace neomeg::dnn::x86
