// Layout rules of the shape-computing operators (dnn/ops/defs/tensor_shape.py). ReshapeTo,
// BroadcastTo and TakePrefix take dst's shape from the caller, who read it from an input's value;
// the rules check it against the other inputs' layouts.
#include <limits>

#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {

void GetVarShape::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    auto ndim = static_cast<int32_t>(src.ndim);
    for (int32_t a : m_param.axes)
        NM_REQUIRE(ParamError, a >= -ndim && a < ndim, "axis ", a, " is out of range for src ",
                   src.to_string());
    for (size_t d = 0; d < src.ndim; ++d)
        NM_REQUIRE(ShapeError, src.shape[d] <= size_t(std::numeric_limits<int32_t>::max()), "src ",
                   src.to_string(), " has a dimension int32 cannot hold");
    size_t n = m_param.axes.empty() ? src.ndim : m_param.axes.size();
    outputs[0] = TensorLayout({n}, dtype::Int32);
}

namespace {

// The shape input of ReshapeTo/BroadcastTo: int32 {dst.ndim}.
template <class Op>
void check_shape_input(const Op& op, const TensorLayout& shape, const TensorLayout& dst) {
    NM_OP_REQUIRE(op, DTypeError, shape.dtype == dtype::Int32, "shape must be int32, got ",
                  shape.to_string());
    NM_OP_REQUIRE(op, ShapeError, shape.ndim == 1, "shape must be 1-D, got ", shape.to_string());
    NM_OP_REQUIRE(op, ShapeError, shape.shape[0] == dst.ndim, "shape ", shape.to_string(),
                  " holds ", shape.shape[0], " dims but dst's shape is ",
                  dst.TensorShape::to_string(),
                  " (the caller gives dst's shape, read from shape's value)");
}

}  // namespace

void ReshapeTo::deduce_layout(std::span<const TensorLayout> inputs,
                              std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    check_shape_input(*this, inputs[1], outputs[0]);
    NM_REQUIRE(ShapeError, outputs[0].total_nr_elems() == src.total_nr_elems(), "cannot reshape ",
               src.to_string(), " to ", outputs[0].TensorShape::to_string());
    outputs[0] = TensorLayout(outputs[0], src.dtype);
}

void BroadcastTo::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    TensorShape dst = outputs[0];
    check_shape_input(*this, inputs[1], outputs[0]);
    bool ok = src.ndim <= dst.ndim;
    for (size_t i = 0; ok && i < src.ndim; ++i) {
        size_t s = src.shape[src.ndim - 1 - i], d = dst.shape[dst.ndim - 1 - i];
        ok = s == d || s == 1;
    }
    NM_REQUIRE(ShapeError, ok, "cannot broadcast ", src.to_string(), " to ", dst.to_string());
    outputs[0] = TensorLayout(dst, src.dtype);
}

void TakePrefix::deduce_layout(std::span<const TensorLayout> inputs,
                               std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &count = inputs[1];
    TensorShape dst = outputs[0];
    NM_REQUIRE(DTypeError, count.dtype == dtype::Int32, "count must be int32, got ",
               count.to_string());
    NM_REQUIRE(ShapeError, count.ndim == 1 && count.shape[0] == 1, "count must be {1}, got ",
               count.to_string());
    NM_REQUIRE(ShapeError, src.ndim >= 1, "src must have an axis 0, got ", src.to_string());
    bool ok = dst.ndim == src.ndim && dst.shape[0] <= src.shape[0];
    for (size_t i = 1; ok && i < src.ndim; ++i)
        ok = dst.shape[i] == src.shape[i];
    NM_REQUIRE(ShapeError, ok, "dst ", dst.to_string(), " is not a prefix along axis 0 of src ",
               src.to_string(), " (the caller gives dst's shape, read from count's value)");
    outputs[0] = TensorLayout(dst, src.dtype);
}

}  // namespace neomeg::dnn
