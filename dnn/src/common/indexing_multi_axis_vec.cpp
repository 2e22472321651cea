// Layout rules of the NumPy advanced-indexing ops; the shape rule itself is
// indexing::plan_multi_axis.
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"

namespace neomeg::dnn {
namespace {

// Checks value against data[indices] for the assigning forms and returns data's layout.
TensorLayout deduce_set_layout(std::span<const TensorLayout> inputs,
                               const std::vector<int32_t>& axes, bool accumulates,
                               const indexing::Who& who) {
    NM_THROW_IF(inputs.size() < 2, ShapeError, who,
                ": expects data, value and one index tensor per axis, got ", inputs.size(),
                " inputs");
    const TensorLayout &data = inputs[0], &value = inputs[1];
    NM_THROW_IF(accumulates && data.dtype.is_bool(), DTypeError, who,
                ": cannot accumulate into bool data ", data.to_string());
    NM_THROW_IF(value.dtype != data.dtype, DTypeError, who, ": value ", value.to_string(),
                " must have the dtype of data ", data.to_string());
    auto plan = indexing::plan_multi_axis(data, inputs.subspan(2), axes, who);
    try {
        (void)value.broadcast(plan.result);
    } catch (const ShapeError&) {
        throw ShapeError(str_cat(who, ": value ", value.to_string(),
                                 " does not broadcast to the indexed shape ",
                                 plan.result.to_string(), " of data ", data.to_string()));
    }
    return TensorLayout(data, data.dtype);
}

}  // namespace

void IndexingMultiAxisVec::deduce_layout(std::span<const TensorLayout> inputs,
                                         std::span<TensorLayout> outputs) {
    NM_REQUIRE(ShapeError, !inputs.empty(), "expects src and one index tensor per axis, got ",
               inputs.size(), " inputs");
    auto plan = indexing::plan_multi_axis(inputs[0], inputs.subspan(1), m_param.axes, *this);
    outputs[0] = TensorLayout(plan.result, inputs[0].dtype);
}

void IndexingSetMultiAxisVec::deduce_layout(std::span<const TensorLayout> inputs,
                                            std::span<TensorLayout> outputs) {
    outputs[0] = deduce_set_layout(inputs, m_param.axes, false, *this);
}

void IndexingIncrMultiAxisVec::deduce_layout(std::span<const TensorLayout> inputs,
                                             std::span<TensorLayout> outputs) {
    outputs[0] = deduce_set_layout(inputs, m_param.axes, true, *this);
}

}  // namespace neomeg::dnn
