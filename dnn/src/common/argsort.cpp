// Layout rule of Argsort: values like src, int32 indices of the same shape.
#include "neomeg/dnn/operators/reduce.h"

namespace neomeg::dnn {

void Argsort::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim >= 1, "src must have at least one axis to sort along, got ",
               src.to_string());
    NM_REQUIRE(DTypeError, !src.dtype.is_bool(), "dtype bool is not supported, src ",
               src.to_string());
    outputs[0] = TensorLayout(src, src.dtype);
    outputs[1] = TensorLayout(src, dtype::Int32);
}

}  // namespace neomeg::dnn
