// Params as named, typed values: the (de)serialization hook of every op. A field's value keeps
// its definition type exactly (dnn/ops/opgen/model.py's SCALAR_TYPES, or an enum), so writing a
// model file and reading it back loses nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"

namespace neomeg {

// An enum field: its value and (for reading) its member name.
struct EnumValue {
    uint32_t value = 0;
    std::string name;
    bool operator==(const EnumValue& rhs) const { return value == rhs.value; }
};

using ParamValue = std::variant<bool, int32_t, uint32_t, uint64_t, float, dnn::DTypeEnum, EnumValue,
                                std::vector<int32_t>>;

struct ParamField {
    std::string name;
    ParamValue value;
};

namespace param_fields_detail {

// The generated to_string() of an enum gives this for a value outside its members.
inline constexpr std::string_view kOutOfRange = "<out of range>";

template <class T>
ParamValue to_value(const T& v) {
    if constexpr (std::is_enum_v<T> && !std::is_same_v<T, dnn::DTypeEnum>)
        return EnumValue{static_cast<uint32_t>(v),
                         to_string(v)};  // by ADL in the param's namespace
    else
        return v;
}

template <class T>
void assign(T& field, const ParamValue& value, std::string_view op, std::string_view name) {
    if constexpr (std::is_enum_v<T> && !std::is_same_v<T, dnn::DTypeEnum>) {
        const auto* e = std::get_if<EnumValue>(&value);
        NM_THROW_IF(!e, ParamError, op, ": field ", name, " is an enum");
        T v = static_cast<T>(e->value);
        NM_THROW_IF(to_string(v) == kOutOfRange, ParamError, op, ": value ", e->value,
                    " of enum field ", name, " is out of range");
        field = v;
    } else {
        const auto* v = std::get_if<T>(&value);
        NM_THROW_IF(!v, ParamError, op, ": field ", name, " gets a value of another type");
        if constexpr (std::is_same_v<T, dnn::DTypeEnum>)
            NM_THROW_IF(static_cast<int>(*v) >= dnn::kNumDTypes, ParamError, op, ": dtype value ",
                        static_cast<int>(*v), " of field ", name, " is out of range");
        field = *v;
    }
}

}  // namespace param_fields_detail

// Every field of a generated param struct, in definition order.
template <class P>
std::vector<ParamField> param_fields_of(const P& p) {
    std::vector<ParamField> out;
    out.reserve(P::kNumFields);
    p.visit([&](const char* name, const auto& v) {
        out.push_back({name, param_fields_detail::to_value(v)});
    });
    return out;
}

// Sets one field of `p` by name; `op` names the op in errors.
template <class P>
void set_param_field_of(P& p, std::string_view name, const ParamValue& value, std::string_view op) {
    bool found = false;
    p.visit([&](const char* n, auto& field) {
        if (!found && name == n) {
            param_fields_detail::assign(field, value, op, name);
            found = true;
        }
    });
    NM_THROW_IF(!found, ParamError, op, ": no param field named ", name);
}

}  // namespace neomeg
