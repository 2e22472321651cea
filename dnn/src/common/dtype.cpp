#include "neomeg/dnn/dtype.h"

#include <array>
#include <charconv>
#include <cmath>
#include <functional>

#include "neomeg/dnn/errors.h"

namespace neomeg::dnn {

size_t DType::size() const {
    switch (m_enum) {
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return sizeof(t);
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, s, n) \
    case DTypeEnum::e:    \
        return sizeof(t);
        NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return sizeof(t);
        NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
    }
    return 0;
}

const char* DType::name() const {
    switch (m_enum) {
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return n;
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, s, n) \
    case DTypeEnum::e:    \
        return n;
        NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return n;
        NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
    }
    return "invalid";
}

DTypeCategory DType::category() const {
    switch (m_enum) {
        case DTypeEnum::Float32:
        case DTypeEnum::Float16:
        case DTypeEnum::BFloat16:
            return DTypeCategory::Float;
        case DTypeEnum::Bool:
            return DTypeCategory::Bool;
        case DTypeEnum::QuantizedS8:
        case DTypeEnum::Quantized8Asymm:
        case DTypeEnum::QuantizedS32:
            return DTypeCategory::Quantized;
        case DTypeEnum::Complex64:
            return DTypeCategory::Complex;
        default:
            return DTypeCategory::Int;
    }
}

bool DType::is_signed() const {
    return m_enum != DTypeEnum::Uint8 && m_enum != DTypeEnum::Bool &&
           m_enum != DTypeEnum::Quantized8Asymm;
}

namespace {

std::string float_str(float v);

float checked_scale(DTypeEnum e, float scale) {
    if (!(scale > 0) || !std::isfinite(scale))
        throw DTypeError(
                str_cat(DType(e).name(), ": scale must be finite and positive, got ", scale));
    return scale;
}

}  // namespace

DType DType::quantized_s8(float scale) {
    return make(DTypeEnum::QuantizedS8, scale, 0);
}

DType DType::quantized_8asymm(float scale, uint8_t zero_point) {
    return make(DTypeEnum::Quantized8Asymm, scale, zero_point);
}

DType DType::quantized_s32(float scale) {
    return make(DTypeEnum::QuantizedS32, scale, 0);
}

DType DType::make(DTypeEnum e, float scale, int32_t zero_point) {
    DType d(e);
    if (!d.is_quantized()) {
        if (scale != 0 || zero_point != 0)
            throw DTypeError(str_cat(d.name(), " takes no scale or zero point"));
        return d;
    }
    d.m_scale = checked_scale(e, scale);
    if (e == DTypeEnum::Quantized8Asymm) {
        if (zero_point < 0 || zero_point > 255)
            throw DTypeError(
                    str_cat("Quantized8Asymm: zero point must be in [0, 255], got ", zero_point));
        d.m_zero_point = static_cast<uint8_t>(zero_point);
    } else if (zero_point != 0) {
        throw DTypeError(
                str_cat(d.name(), " is symmetric: zero point must be 0, got ", zero_point));
    }
    return d;
}

DType DType::storage() const {
    switch (m_enum) {
#define NM_CB(e, t, s, n) \
    case DTypeEnum::e:    \
        return dtype::s;
        NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
        default:
            return DType(m_enum);
    }
}

std::string DType::full_name() const {
    if (!is_quantized())
        return name();
    if (m_enum == DTypeEnum::Quantized8Asymm)
        return str_cat(name(), "(", float_str(m_scale), ", ", static_cast<int>(m_zero_point), ")");
    return str_cat(name(), "(", float_str(m_scale), ")");
}

size_t DType::hash() const {
    size_t h = static_cast<size_t>(m_enum);
    if (is_quantized()) {
        h = h * 1000003u ^ std::hash<float>{}(m_scale);
        h = h * 1000003u ^ m_zero_point;
    }
    return h;
}

namespace {

// The shortest decimal that reads back as the same float (std::to_chars), so that full_name
// round-trips through from_name (the model file stores dtypes by these names).
std::string float_str(float v) {
    std::array<char, 32> buf{};
    auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), r.ptr);
}

// "QuantizedS8(0.1)", "Quantized8Asymm(0.1, 128)": full_name's form.
DType quantized_from_name(std::string_view name) {
    auto open = name.find('(');
    if (open == std::string_view::npos || name.back() != ')')
        return DType();
    std::string_view base = name.substr(0, open);
    std::string_view args = name.substr(open + 1, name.size() - open - 2);
    for (DTypeEnum e :
         {DTypeEnum::QuantizedS8, DTypeEnum::Quantized8Asymm, DTypeEnum::QuantizedS32}) {
        if (base != DType(e).name())
            continue;
        float scale = 0;
        auto r = std::from_chars(args.data(), args.data() + args.size(), scale);
        int32_t zp = 0;
        const char* end = args.data() + args.size();
        if (r.ec == std::errc() && e == DTypeEnum::Quantized8Asymm && r.ptr + 2 < end &&
            r.ptr[0] == ',' && r.ptr[1] == ' ')
            r = std::from_chars(r.ptr + 2, end, zp);
        if (r.ec != std::errc() || r.ptr != end)
            throw DTypeError(str_cat("malformed quantized dtype name '", name, "'"));
        return DType::make(e, scale, zp);
    }
    throw DTypeError(str_cat("unknown dtype name '", name, "'"));
}

}  // namespace

DType DType::from_name(std::string_view name) {
#define NM_CB(e, t, n) \
    if (name == n)     \
        return dtype::e;
    NM_FOREACH_DTYPE(NM_CB)
    NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
    if (name.find('(') != std::string_view::npos)
        return quantized_from_name(name);
    throw DTypeError(str_cat("unknown dtype name '", name, "'"));
}

}  // namespace neomeg::dnn
