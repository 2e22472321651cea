// What a conversion of one MegEngine operator into NeoMeg graph ops sees: the operator as read
// from the file, its input vars, and the graph to insert into, with helpers for the constants
// and host values the conversions need. Each mge_oprs*.cpp registers its conversions by
// MegEngine's registry name (the "type" an operator is written with).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neomeg/graph/graph.h"
#include "neomeg/serialization/errors.h"
#include "neomeg/serialization/mge_schema_generated.h"

namespace neomeg::serialization::mge {

class Converter {
public:
    Converter(graph::ComputingGraph& graph, CompNode cn) : m_graph(graph), m_cn(cn) {}

    graph::ComputingGraph& graph() { return m_graph; }
    CompNode comp_node() const { return m_cn; }

    // Inserts `op` and gives its outputs; a layout error becomes a ModelError (the file's
    // operator does not fit its inputs).
    const std::vector<graph::VarNode*>& insert(const OpDef& op,
                                               std::span<graph::VarNode* const> inputs);
    graph::VarNode* insert1(const OpDef& op, std::span<graph::VarNode* const> inputs);
    graph::VarNode* insert1(const OpDef& op, std::initializer_list<graph::VarNode*> inputs) {
        return insert1(op, std::span<graph::VarNode* const>(inputs.begin(), inputs.size()));
    }

    // `var` converted to `dtype` (a TypeCvt; itself where it has that dtype already). A quantized
    // var converts through its value scale * (v - zero_point).
    graph::VarNode* convert(graph::VarNode* var, dnn::DType dtype);

    // Constants: a scalar (ndim 0) of `dtype`, and an int32 vector.
    graph::VarNode* scalar(float value, dnn::DType dtype);
    graph::VarNode* int_vector(const std::vector<int32_t>& values);

    // The integer elements of a var whose value the import knows (a constant of the file, or a
    // value the graph computed when it was inserted: shapes and arithmetic on them); nullopt
    // otherwise.
    std::optional<std::vector<int64_t>> int_value(const graph::VarNode* var) const;
    void remember(const graph::VarNode* var, std::vector<int64_t> value) {
        m_int_values[var] = std::move(value);
    }

private:
    graph::ComputingGraph& m_graph;
    CompNode m_cn;
    std::map<const graph::VarNode*, std::vector<int64_t>> m_int_values;
};

// One MegEngine operator's conversion: the NeoMeg vars of its outputs (those the file numbers:
// MegEngine leaves out workspace-like outputs), in order.
using Conversion = std::function<std::vector<graph::VarNode*>(
        Converter&, const fbs::Operator&, std::span<graph::VarNode* const> inputs)>;
using ConversionTable = std::map<std::string, Conversion, std::less<>>;

void add_compute_conversions(ConversionTable& table);   // mge_oprs_compute.cpp
void add_shape_conversions(ConversionTable& table);     // mge_oprs_shape.cpp
void add_resample_conversions(ConversionTable& table);  // mge_oprs_resample.cpp

// The table of every conversion, built once.
const ConversionTable& conversions();

// Error helpers for conversions: the operator's type is added by the caller.
[[noreturn]] void fail(const std::string& message);
void require(bool cond, const std::string& message);

// The operator's param as table T (the union member `type`); ModelError when it holds another.
template <class T>
const T& param_of(const fbs::Operator& op, fbs::OperatorParam type) {
    const T* p = op.param_type() == type ? static_cast<const T*>(op.param()) : nullptr;
    if (!p)
        fail(dnn::str_cat("expected param ", fbs::EnumNameOperatorParam(type), ", the file has ",
                          fbs::EnumNameOperatorParam(op.param_type()),
                          op.param_type() == type ? " without its table" : ""));
    return *p;
}

// Normalises a possibly negative axis of a tensor of `ndim` dims (`ndim + 1` where inserting).
int32_t axis_in(int64_t axis, size_t ndim, const char* what);

// MegEngine's dtype enum as NeoMeg's; ModelError for the ones NeoMeg has no counterpart of
// (low-bit types) and for the quantized ones, which need their scale (the table's form below).
dnn::DType dtype_of(fbs::DTypeEnum type);

// A dtype table of the file (a tensor's, a TypeCvt's target, an operator's output dtype) with its
// scale and zero point: QuantizedS8, QuantizedS32 and Quantized8Asymm; ModelError naming `what`
// for the 4-bit, 16-bit and 1-bit quantized types, a quantized type without its param, a plain
// one with a param, or a scale that is not finite and positive.
dnn::DType dtype_of(const fbs::DType& type, const std::string& what);

// The output dtype a MegEngine operator names (its OperatorNodeConfig's: the requantised dtype of
// a quantized ConvBias or ElemwiseMultiType); nullopt where the file gives none.
std::optional<dnn::DType> output_dtype_of(const fbs::Operator& op);

}  // namespace neomeg::serialization::mge
