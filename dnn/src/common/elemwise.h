// Shared knowledge about Elemwise modes that every backend needs: the dtype rule of each mode
// (from the "dtypes" attribute in dnn/ops/defs/elemwise.py) and which arithmetic it runs in.
#pragma once

#include <algorithm>
#include <string_view>

#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/params/elemwise.h"

namespace neomeg::dnn::elemwise {

using Mode = param::Elemwise::Mode;

enum class DTypeRule { Float, Numeric, TrueDiv, Compare, Classify, Logical, Not, Shift, Select };

constexpr DTypeRule parse_dtype_rule(std::string_view s) {
    if (s == "float")
        return DTypeRule::Float;
    if (s == "numeric")
        return DTypeRule::Numeric;
    if (s == "truediv")
        return DTypeRule::TrueDiv;
    if (s == "compare")
        return DTypeRule::Compare;
    if (s == "classify")
        return DTypeRule::Classify;
    if (s == "logical")
        return DTypeRule::Logical;
    if (s == "not")
        return DTypeRule::Not;
    if (s == "shift")
        return DTypeRule::Shift;
    if (s == "select")
        return DTypeRule::Select;
    // Not a constant expression: an unknown rule in the definitions fails the static_assert below.
    throw ParamError("unknown Elemwise dtype rule");
}

constexpr DTypeRule dtype_rule(Mode m) {
    return parse_dtype_rule(param::Elemwise::dtypes(m));
}

constexpr bool all_dtype_rules_known() {
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        (void)dtype_rule(static_cast<Mode>(i));
    return true;
}
static_assert(all_dtype_rules_known());

constexpr int arity(Mode m) {
    return param::Elemwise::arity(m);
}

constexpr size_t max_arity() {
    int m = 0;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        m = std::max(m, arity(static_cast<Mode>(i)));
    return static_cast<size_t>(m);
}

// Index of the input whose dtype is the data dtype (COND's input 0 is its condition).
constexpr size_t data_input(Mode m) {
    return dtype_rule(m) == DTypeRule::Select ? 1 : 0;
}

// Whether a mode on inputs of data dtype `dt` computes in floating point (double in naive); all
// other cases compute in 64-bit integers.
inline bool computes_in_float(Mode m, DType dt) {
    return dt.is_float() || dtype_rule(m) == DTypeRule::TrueDiv;
}

}  // namespace neomeg::dnn::elemwise
