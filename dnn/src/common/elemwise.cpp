// Layout rule of Elemwise: inputs broadcast together, dst is contiguous of the broadcast shape with
// the dtype the mode's rule gives (see dnn/ops/defs/elemwise.py).
#include "src/common/elemwise.h"

#include "neomeg/dnn/operators/elemwise.h"

#include <string>
#include <vector>

namespace neomeg::dnn {

namespace {

bool dtype_allowed(elemwise::DTypeRule rule, DType dt) {
    using elemwise::DTypeRule;
    switch (rule) {
        case DTypeRule::Float:
            return dt.is_float();
        case DTypeRule::Numeric:
        case DTypeRule::TrueDiv:
            return !dt.is_bool();
        case DTypeRule::Compare:
        case DTypeRule::Classify:
        case DTypeRule::Select:
            return true;
        case DTypeRule::Logical:
            return !dt.is_float();
        case DTypeRule::Not:
            return dt.is_bool();
        case DTypeRule::Shift:
            return dt.is_int();
    }
    return false;
}

const char* dtype_rule_doc(elemwise::DTypeRule rule) {
    using elemwise::DTypeRule;
    switch (rule) {
        case DTypeRule::Float:
            return "float dtypes only";
        case DTypeRule::Numeric:
        case DTypeRule::TrueDiv:
            return "float or integer dtypes, not bool";
        case DTypeRule::Compare:
        case DTypeRule::Classify:
        case DTypeRule::Select:
            return "any dtype";
        case DTypeRule::Logical:
            return "bool or integer dtypes";
        case DTypeRule::Not:
            return "bool only";
        case DTypeRule::Shift:
            return "integer dtypes only";
    }
    return "";
}

DType output_dtype(elemwise::DTypeRule rule, DType data) {
    using elemwise::DTypeRule;
    switch (rule) {
        case DTypeRule::Compare:
        case DTypeRule::Classify:
        case DTypeRule::Not:
            return dtype::Bool;
        case DTypeRule::TrueDiv:
            return data.is_float() ? data : dtype::Float32;
        default:
            return data;
    }
}

// "ADD, SUB, ...": the modes whose definition gives them `attr` (complex, quantized).
std::string modes_with(bool (*attr)(elemwise::Mode)) {
    std::string s;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        if (attr(static_cast<elemwise::Mode>(i))) {
            s += s.empty() ? "" : ", ";
            s += param::to_string(static_cast<elemwise::Mode>(i));
        }
    return s;
}

}  // namespace

void Elemwise::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    using namespace elemwise;
    auto mode = m_param.mode;
    // Not through NM_REQUIRE: its message prefix prints the mode by name, which has none here.
    NM_THROW_IF(static_cast<size_t>(mode) >= Param::kModeCount, ParamError, "Elemwise: mode value ",
                static_cast<size_t>(mode), " is out of range (", Param::kModeCount, " modes)");
    NM_REQUIRE(ParamError, inputs.size() == static_cast<size_t>(arity(mode)), "mode ",
               to_string(mode), " takes ", arity(mode), " inputs, got ", inputs.size(),
               inputs.empty() ? "" : ": ", layouts_str(inputs));
    NM_REQUIRE(ShapeError, outputs.size() == 1, "expects 1 output, got ", outputs.size());

    DTypeRule rule = dtype_rule(mode);
    size_t first = data_input(mode);
    DType data = inputs[first].dtype;
    if (rule == DTypeRule::Select)
        NM_REQUIRE(DTypeError, inputs[0].dtype.is_bool(), "mode ", to_string(mode),
                   " needs a bool condition (input 0), got ", layouts_str(inputs));
    for (size_t i = first; i < inputs.size(); ++i)
        NM_REQUIRE(DTypeError, inputs[i].dtype == data, "mode ", to_string(mode),
                   " needs inputs of one dtype (",
                   data.is_quantized() || inputs[i].dtype.is_quantized()
                           ? "quantized ones of one scale: requantize with TypeCvt first"
                           : "promote them first",
                   "), got ", layouts_str(inputs));
    if (data.is_complex()) {
        NM_REQUIRE(DTypeError, param::Elemwise::complex(mode), "mode ", to_string(mode),
                   " does not take ", data.name(), " (only ", modes_with(&param::Elemwise::complex),
                   " do), got ", layouts_str(inputs));
    } else if (data.is_quantized()) {
        // MegEngine 1.13's rule: the modes that are exact on the stored integers of one scale,
        // and none on Quantized8Asymm, whose zero point a sum would count twice.
        NM_REQUIRE(DTypeError, data.enumv() != DTypeEnum::Quantized8Asymm, "mode ", to_string(mode),
                   " takes no Quantized8Asymm (dequantize with TypeCvt first), got ",
                   layouts_str(inputs));
        NM_REQUIRE(DTypeError, param::Elemwise::quantized(mode), "mode ", to_string(mode),
                   " does not take ", data.name(), " (only ",
                   modes_with(&param::Elemwise::quantized),
                   " do; dequantize with TypeCvt first), got ", layouts_str(inputs));
    } else
        NM_REQUIRE(DTypeError, dtype_allowed(rule, data), "mode ", to_string(mode), " takes ",
                   dtype_rule_doc(rule), ", got ", layouts_str(inputs));

    std::vector<TensorShape> shapes(inputs.begin(), inputs.end());
    TensorShape shape;
    try {
        shape = broadcast_shapes(shapes);
    } catch (const ShapeError&) {
        NM_REQUIRE(ShapeError, false, "mode ", to_string(mode),
                   ": input shapes cannot be broadcast together: ", layouts_str(inputs));
    }
    outputs[0] = TensorLayout(shape, output_dtype(rule, data));
}

}  // namespace neomeg::dnn
