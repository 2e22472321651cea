// Element types of the kernel library: what a tensor's bytes mean.
// Half and bfloat16 come from Eigen, which already does correct rounding and works in CUDA code.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace neomeg::dnn {

using dt_float32 = float;
using dt_float16 = Eigen::half;
using dt_bfloat16 = Eigen::bfloat16;
using dt_int8 = int8_t;
using dt_uint8 = uint8_t;
using dt_int16 = int16_t;
using dt_int32 = int32_t;
using dt_bool = bool;

// X-macro over every dtype: cb(EnumName, c_type, "name"). Order defines DTypeEnum values, which are
// part of the model file format: append only.
#define NM_FOREACH_DTYPE(cb)                                                  \
    cb(Float32, dt_float32, "float32") cb(Float16, dt_float16, "float16")     \
            cb(BFloat16, dt_bfloat16, "bfloat16") cb(Int8, dt_int8, "int8")   \
                    cb(Uint8, dt_uint8, "uint8") cb(Int16, dt_int16, "int16") \
                            cb(Int32, dt_int32, "int32") cb(Bool, dt_bool, "bool")

enum class DTypeEnum : uint8_t {
#define NM_CB(e, t, n) e,
    NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
};
inline constexpr int kNumDTypes = 8;

enum class DTypeCategory : uint8_t { Float, Int, Bool };

class DType {
public:
    constexpr DType() = default;                 // float32, like MegEngine's default
    constexpr DType(DTypeEnum e) : m_enum(e) {}  // NOLINT(google-explicit-constructor)

    constexpr DTypeEnum enumv() const { return m_enum; }
    size_t size() const;
    size_t size(size_t nr_elems) const { return size() * nr_elems; }
    const char* name() const;
    DTypeCategory category() const;
    bool is_float() const { return category() == DTypeCategory::Float; }
    bool is_int() const { return category() == DTypeCategory::Int; }
    bool is_bool() const { return category() == DTypeCategory::Bool; }
    bool is_signed() const;

    // Parses "float32", "int8", ...; throws DTypeError on an unknown name.
    static DType from_name(std::string_view name);

    constexpr bool operator==(const DType&) const = default;

private:
    DTypeEnum m_enum = DTypeEnum::Float32;
};

namespace dtype {
#define NM_CB(e, t, n) inline constexpr DType e{DTypeEnum::e};
NM_FOREACH_DTYPE(NM_CB)
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
#undef NM_CB

template <class T>
inline constexpr bool is_float_type_v =
        std::is_same_v<T, dt_float32> || std::is_same_v<T, dt_float16> ||
        std::is_same_v<T, dt_bfloat16>;

// The type naive kernels compute in: float for the low-precision floats, the type itself otherwise.
template <class T>
using compute_type_t = std::conditional_t<is_float_type_v<T>, float, T>;

}  // namespace neomeg::dnn
