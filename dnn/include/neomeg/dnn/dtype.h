// Element types of the kernel library: what a tensor's bytes mean.
// Half and bfloat16 come from Eigen, which already does correct rounding and works in CUDA code.
#pragma once

#include <Eigen/Core>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace neomeg::dnn {

using dt_float32 = float;
using dt_float16 = Eigen::half;
using dt_bfloat16 = Eigen::bfloat16;
using dt_int8 = int8_t;
using dt_uint8 = uint8_t;
using dt_int16 = int16_t;
using dt_int32 = int32_t;
using dt_bool = bool;
// Two float32s, real part first: NumPy's complex64 memory layout, so a tensor's bytes are an
// array's.
using dt_complex64 = std::complex<float>;
static_assert(sizeof(dt_complex64) == 8);

// X-macro over every dtype: cb(EnumName, c_type, "name"). Order defines DTypeEnum values, which are
// part of the model file format: append only.
#define NM_FOREACH_DTYPE(cb)                                                  \
    cb(Float32, dt_float32, "float32") cb(Float16, dt_float16, "float16")     \
            cb(BFloat16, dt_bfloat16, "bfloat16") cb(Int8, dt_int8, "int8")   \
                    cb(Uint8, dt_uint8, "uint8") cb(Int16, dt_int16, "int16") \
                            cb(Int32, dt_int32, "int32") cb(Bool, dt_bool, "bool")

// Quantized dtypes, after the plain ones in DTypeEnum (so also append only): cb(EnumName, storage
// c_type, plain storage EnumName, "name"). A value v stands for scale * (v - zero_point); only
// Quantized8Asymm has a zero point. Names are MegEngine's.
#define NM_FOREACH_QUANTIZED_DTYPE(cb)                              \
    cb(QuantizedS8, dt_int8, Int8, "QuantizedS8")                   \
            cb(Quantized8Asymm, dt_uint8, Uint8, "Quantized8Asymm") \
                    cb(QuantizedS32, dt_int32, Int32, "QuantizedS32")

// Complex dtypes, after the quantized ones (append only): cb(EnumName, c_type, "name"), as
// NM_FOREACH_DTYPE. Not in NM_FOREACH_DTYPE, so that dispatch_dtype refuses them and only a kernel
// that says it computes on complex values does.
#define NM_FOREACH_COMPLEX_DTYPE(cb) cb(Complex64, dt_complex64, "complex64")

enum class DTypeEnum : uint8_t {
#define NM_CB(e, t, n) e,
    NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, s, n) e,
            NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, n) e,
                    NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
};
inline constexpr int kNumPlainDTypes = 8;
inline constexpr int kNumQuantizedDTypes = 3;
inline constexpr int kNumDTypes = 12;

enum class DTypeCategory : uint8_t { Float, Int, Bool, Quantized, Complex };

// A dtype: its enum and, for the quantized ones, scale and zero point. Passed by value everywhere,
// so it stays 8 bytes and trivially copyable; plain dtypes hold scale 0 and zero point 0, which
// keeps == and the hash of a plain dtype its enum's.
class DType {
public:
    constexpr DType() = default;                 // float32, like MegEngine's default
    constexpr DType(DTypeEnum e) : m_enum(e) {}  // NOLINT(google-explicit-constructor)

    // Quantized dtypes; throw DTypeError for a scale that is not finite and positive.
    static DType quantized_s8(float scale);
    static DType quantized_8asymm(float scale, uint8_t zero_point);
    static DType quantized_s32(float scale);
    // Any quantized enum (zero_point must be 0 unless `e` is Quantized8Asymm); a plain enum with
    // scale 0 and zero point 0 gives the plain dtype.
    static DType make(DTypeEnum e, float scale, int32_t zero_point);

    constexpr DTypeEnum enumv() const { return m_enum; }
    constexpr bool is_quantized() const {
        return static_cast<int>(m_enum) >= kNumPlainDTypes &&
               static_cast<int>(m_enum) < kNumPlainDTypes + kNumQuantizedDTypes;
    }
    constexpr float scale() const { return m_scale; }
    constexpr int32_t zero_point() const { return m_zero_point; }
    // The plain dtype of a quantized dtype's storage (QuantizedS8 -> Int8); any other dtype itself.
    DType storage() const;
    // The name with the parameters: "QuantizedS8(0.1)", "Quantized8Asymm(0.1, 128)".
    std::string full_name() const;
    size_t size() const;
    size_t size(size_t nr_elems) const { return size() * nr_elems; }
    const char* name() const;
    DTypeCategory category() const;
    bool is_float() const { return category() == DTypeCategory::Float; }
    bool is_int() const { return category() == DTypeCategory::Int; }
    bool is_bool() const { return category() == DTypeCategory::Bool; }
    bool is_complex() const { return category() == DTypeCategory::Complex; }
    bool is_signed() const;

    // Parses "float32", "int8", "complex64", ...; throws DTypeError on an unknown name.
    static DType from_name(std::string_view name);

    constexpr bool operator==(const DType&) const = default;
    size_t hash() const;

private:
    DTypeEnum m_enum = DTypeEnum::Float32;
    uint8_t m_zero_point = 0;
    float m_scale = 0;
};
static_assert(sizeof(DType) == 8 && std::is_trivially_copyable_v<DType>);

namespace dtype {
#define NM_CB(e, t, n) inline constexpr DType e{DTypeEnum::e};
NM_FOREACH_DTYPE(NM_CB)
NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
}  // namespace dtype

// Maps a C++ element type to its DType: DTypeTrait<float>::dtype == dtype::Float32.
template <class T>
struct DTypeTrait;
#define NM_CB(e, t, n)                              \
    template <>                                     \
    struct DTypeTrait<t> {                          \
        static constexpr DType dtype{DTypeEnum::e}; \
        static constexpr const char* name = n;      \
    };
NM_FOREACH_DTYPE(NM_CB)
NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB

template <class T>
inline constexpr bool is_float_type_v =
        std::is_same_v<T, dt_float32> || std::is_same_v<T, dt_float16> ||
        std::is_same_v<T, dt_bfloat16>;

// The type naive kernels compute in: float for the low-precision floats, the type itself otherwise.
template <class T>
using compute_type_t = std::conditional_t<is_float_type_v<T>, float, T>;

}  // namespace neomeg::dnn
