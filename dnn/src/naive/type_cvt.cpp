#include "src/naive/type_cvt.h"

#include <bit>
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

// Rounds to nearest even float32. Doubles beyond float's range become infinities explicitly,
// since C++ leaves that conversion undefined (Arange and Linspace can compute such values).
float to_float(double d) {
    constexpr double kOverflow = 0x1.ffffffp+127;  // FLT_MAX + half an ulp, a tie that rounds up
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (std::abs(d) >= kOverflow)
        return d > 0 ? kInf : -kInf;
    return static_cast<float>(d);
}

// Rounds to float32 toward zero and sets the last mantissa bit when inexact. A later rounding to
// a format at least two bits narrower then equals a single correct rounding of d.
float round_to_odd_float(double d) {
    float f = to_float(d);
    if (std::isnan(d) || std::isinf(f) || static_cast<double>(f) == d)
        return f;
    if (std::abs(static_cast<double>(f)) > std::abs(d))
        f = std::nextafter(f, 0.0f);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <class D>
D float_to_int(double d) {
    using L = std::numeric_limits<D>;
    if (std::isnan(d))
        return 0;
    double t = std::trunc(d);
    if (t <= static_cast<double>(L::min()))
        return L::min();
    if (t >= static_cast<double>(L::max()))
        return L::max();
    return static_cast<D>(t);
}

template <class D>
D convert(Scalar s) {
    if constexpr (std::is_same_v<D, dt_bool>) {
        return s.is_float ? s.f != 0 : s.i != 0;
    } else if constexpr (std::is_same_v<D, dt_float32>) {
        return s.is_float ? to_float(s.f) : static_cast<float>(s.i);
    } else if constexpr (is_float_type_v<D>) {
        return D(round_to_odd_float(s.is_float ? s.f : static_cast<double>(s.i)));
    } else {
        return s.is_float ? float_to_int<D>(s.f) : static_cast<D>(s.i);
    }
}

class TypeCvtImpl final : public TypeCvt {
public:
    using TypeCvt::TypeCvt;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        for_each_index(src.layout, [&](const auto& idx) {
            store_scalar(dst, offset_of(dst.layout, idx.data()),
                         load_scalar(src, offset_of(src.layout, idx.data())));
        });
    }
};

// A quantized element's value, scale * (v - zero_point), in float32 as MegEngine computes it.
Scalar load_quantized(const TensorND& t, ptrdiff_t off) {
    DType dt = t.layout.dtype;
    return dispatch_dtype(dt.storage(), [&](auto tag) -> Scalar {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, dt_bool>) {
            int64_t v = static_cast<int64_t>(elem<T>(t, off)) - dt.zero_point();
            return Scalar::of_float(static_cast<double>(static_cast<float>(v) * dt.scale()));
        } else {
            throw DTypeError("invalid quantized storage");
        }
    });
}

void store_quantized(const TensorND& t, ptrdiff_t off, Scalar s) {
    DType dt = t.layout.dtype;
    float v = s.is_float ? static_cast<float>(s.f) : static_cast<float>(s.i);
    dispatch_dtype(dt.storage(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, dt_bool>)
            elem<T>(t, off) = quantize_value<T>(v, dt.scale(), dt.zero_point());
    });
}

}  // namespace

Scalar load_scalar(const TensorND& t, ptrdiff_t off) {
    if (t.layout.dtype.is_quantized())
        return load_quantized(t, off);
    return dispatch_dtype(t.layout.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T v = elem<T>(t, off);
        if constexpr (is_float_type_v<T>)
            return Scalar::of_float(static_cast<double>(static_cast<float>(v)));
        else
            return Scalar::of_int(static_cast<int64_t>(v));
    });
}

void store_scalar(const TensorND& t, ptrdiff_t off, Scalar s) {
    if (t.layout.dtype.is_quantized())
        return store_quantized(t, off, s);
    dispatch_dtype(t.layout.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        elem<T>(t, off) = convert<T>(s);
    });
}

NM_REGISTER_NAIVE(TypeCvt, TypeCvtImpl);
}  // namespace neomeg::dnn::naive
