// The op params' side of the model file: each param set's table (params.fbs, generated from the
// operator definitions by src/opgen/emit_model_schema.py, like param_codec.cpp), and what the
// loader must know of each operator before trusting a file: its param set and its input arity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "neomeg/op/param_fields.h"
#include "neomeg/serialization/errors.h"

namespace neomeg::serialization::detail {

struct OpSignature {
    const char* op;
    const char* param_set;
    int num_inputs;        // the fixed inputs
    bool variadic_inputs;  // any number more
};

// The registry operator named `op`; nullptr when there is none.
const OpSignature* find_op_signature(std::string_view op);

// A flatbuffer whose root is `set`'s table, holding `fields` (an op's param_fields()).
std::vector<uint8_t> encode_params(std::string_view set, const std::vector<ParamField>& fields);
// Verifies `data` as `set`'s table and gives its fields (enum values unchecked: set_param_field
// checks them); ModelError when it does not verify.
std::vector<ParamField> decode_params(std::string_view set, const uint8_t* data, size_t size);

// Helpers of the generated codec.
inline void check_field_count(const std::vector<ParamField>& f, size_t n, const char* set) {
    if (f.size() != n)
        throw ModelError(dnn::str_cat("param set ", set, " has ", n, " fields, got ", f.size()));
}

template <class T>
const T& get(const std::vector<ParamField>& f, size_t i, const char* set, const char* name) {
    const auto* v = f[i].name == name ? std::get_if<T>(&f[i].value) : nullptr;
    if (!v)
        throw ModelError(dnn::str_cat("param set ", set, ": field ", i, " is not ", name,
                                      " of its definition type"));
    return *v;
}

inline dnn::DTypeEnum dtype_by_name(std::string_view name, const char* field) {
    // a dtype field holds only the enum: a quantized one's parameters are fields of their own
#define NM_CB(e, t, s, n) \
    if (name == n)        \
        return dnn::DTypeEnum::e;
    NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
    try {
        return dnn::DType::from_name(name).enumv();
    } catch (const dnn::DTypeError&) {
        throw ModelError(dnn::str_cat("param field ", field, " has unknown dtype '", name, "'"));
    }
}

}  // namespace neomeg::serialization::detail
