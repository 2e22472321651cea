// The Converter's helpers and the table of conversions.
#include "mge_convert.h"

#include <cmath>
#include <cstring>

#include "neomeg/op/op_defs.h"

namespace neomeg::serialization::mge {

using dnn::str_cat;
using graph::VarNode;

void fail(const std::string& message) {
    throw ModelError(message);
}

void require(bool cond, const std::string& message) {
    if (!cond)
        fail(message);
}

int32_t axis_in(int64_t axis, size_t ndim, const char* what) {
    auto n = static_cast<int64_t>(ndim);
    int64_t a = axis < 0 ? axis + n : axis;
    require(a >= 0 && a < n, str_cat(what, " ", axis, " is outside a tensor of ", ndim, " dims"));
    return static_cast<int32_t>(a);
}

dnn::DType dtype_of(fbs::DTypeEnum type) {
    switch (type) {
        case fbs::DTypeEnum::Float32:
            return dnn::dtype::Float32;
        case fbs::DTypeEnum::Float16:
            return dnn::dtype::Float16;
        case fbs::DTypeEnum::BFloat16:
            return dnn::dtype::BFloat16;
        case fbs::DTypeEnum::Int8:
            return dnn::dtype::Int8;
        case fbs::DTypeEnum::Uint8:
            return dnn::dtype::Uint8;
        case fbs::DTypeEnum::Int16:
            return dnn::dtype::Int16;
        case fbs::DTypeEnum::Int32:
            return dnn::dtype::Int32;
        case fbs::DTypeEnum::Bool:
            return dnn::dtype::Bool;
        case fbs::DTypeEnum::QuantizedS8:
        case fbs::DTypeEnum::QuantizedS32:
        case fbs::DTypeEnum::Quantized8Asymm:
            fail(str_cat("MegEngine dtype ", fbs::EnumNameDTypeEnum(type),
                         " without its scale (where the file names a dtype by its enum only)"));
        default:
            break;
    }
    const char* name = fbs::EnumNameDTypeEnum(type);
    fail(str_cat("MegEngine dtype ", *name ? name : std::to_string(static_cast<int>(type)),
                 " has no NeoMeg counterpart"));
}

dnn::DType dtype_of(const fbs::DType& type, const std::string& what) {
    const auto* q = type.param_as_LinearQuantizationParam();
    switch (type.type()) {
        case fbs::DTypeEnum::QuantizedS8:
        case fbs::DTypeEnum::QuantizedS32:
        case fbs::DTypeEnum::Quantized8Asymm: {
            const char* name = fbs::EnumNameDTypeEnum(type.type());
            if (!q)
                fail(str_cat(what, " is ", name, " without its scale (no quantization param)"));
            float scale = q->scale();
            if (!std::isfinite(scale) || scale <= 0)
                fail(str_cat(what, " is ", name, " of scale ", scale,
                             " (a scale must be finite and positive)"));
            if (type.type() == fbs::DTypeEnum::Quantized8Asymm)
                return dnn::DType::quantized_8asymm(scale, q->zero_point());
            // MegEngine writes a symmetric type's zero point as 0; another is not its meaning.
            if (q->zero_point() != 0)
                fail(str_cat(what, " is ", name, " with zero point ", int(q->zero_point()),
                             " (a symmetric type has none)"));
            return type.type() == fbs::DTypeEnum::QuantizedS8 ? dnn::DType::quantized_s8(scale)
                                                              : dnn::DType::quantized_s32(scale);
        }
        case fbs::DTypeEnum::Quantized4Asymm:
        case fbs::DTypeEnum::QuantizedS4:
        case fbs::DTypeEnum::QuantizedS16:
        case fbs::DTypeEnum::QuantizedS1:
            fail(str_cat(what, " is ", fbs::EnumNameDTypeEnum(type.type()),
                         "; NeoMeg imports the 8-bit quantized types (QuantizedS8, "
                         "Quantized8Asymm) and QuantizedS32"));
        default:
            break;
    }
    if (type.param_type() != fbs::DTypeParam::NONE)
        fail(str_cat(what, " is ", fbs::EnumNameDTypeEnum(type.type()),
                     " with a quantization param, which only a quantized type has"));
    try {
        return dtype_of(type.type());
    } catch (const ModelError& e) {
        fail(str_cat(what, ": ", e.what()));
    }
}

std::optional<dnn::DType> output_dtype_of(const fbs::Operator& op) {
    if (!op.output_dtype())
        return std::nullopt;
    return dtype_of(*op.output_dtype(), "the operator's output dtype");
}

const std::vector<VarNode*>& Converter::insert(const OpDef& op, std::span<VarNode* const> inputs) {
    try {
        return m_graph.insert(op, inputs);
    } catch (const dnn::Error& e) {
        throw ModelError(e.what());
    }
}

VarNode* Converter::insert1(const OpDef& op, std::span<VarNode* const> inputs) {
    const auto& outs = insert(op, inputs);
    require(outs.size() == 1, str_cat(op.name(), " gives ", outs.size(), " outputs, not 1"));
    return outs[0];
}

VarNode* Converter::convert(VarNode* var, dnn::DType dtype) {
    if (var->dtype() == dtype)
        return var;
    return insert1(
            ops::TypeCvt(dnn::param::TypeCvt{dtype.enumv(), dtype.scale(), dtype.zero_point()}),
            {var});
}

VarNode* Converter::scalar(float value, dnn::DType dtype) {
    dnn::TensorShape shape;  // ndim 0: one element
    if (dtype == dnn::dtype::Int32) {
        auto i = static_cast<int32_t>(value);
        return m_graph.constant(DeviceTensor::from_host(&i, shape, dtype, m_cn));
    }
    VarNode* v =
            m_graph.constant(DeviceTensor::from_host(&value, shape, dnn::dtype::Float32, m_cn));
    if (dtype != dnn::dtype::Float32)
        v = insert1(ops::TypeCvt(dnn::param::TypeCvt{dtype.enumv()}), {v});
    return v;
}

VarNode* Converter::int_vector(const std::vector<int32_t>& values) {
    dnn::TensorShape shape;
    shape.ndim = 1;
    shape.shape[0] = values.size();
    DeviceTensor t =
            values.empty() ? DeviceTensor::empty(shape, dnn::dtype::Int32, m_cn)
                           : DeviceTensor::from_host(values.data(), shape, dnn::dtype::Int32, m_cn);
    VarNode* v = m_graph.constant(std::move(t));
    remember(v, {values.begin(), values.end()});
    return v;
}

std::optional<std::vector<int64_t>> Converter::int_value(const VarNode* var) const {
    if (auto it = m_int_values.find(var); it != m_int_values.end())
        return it->second;
    const DeviceTensor* hv = var->host_value();
    if (!hv || var->dtype() != dnn::dtype::Int32 || !hv->layout().is_contiguous())
        return std::nullopt;
    std::vector<int32_t> v(var->shape().total_nr_elems());
    if (!v.empty())
        hv->to_host(v.data());
    return std::vector<int64_t>(v.begin(), v.end());
}

const ConversionTable& conversions() {
    static const ConversionTable table = [] {
        ConversionTable t;
        add_compute_conversions(t);
        add_shape_conversions(t);
        add_resample_conversions(t);
        return t;
    }();
    return table;
}

}  // namespace neomeg::serialization::mge
