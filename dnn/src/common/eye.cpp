// Layout rule of Eye: the caller sets dst's 2-D shape; the dtype is the param's (any).
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void Eye::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    TensorLayout& dst = outputs[0];
    NM_REQUIRE(ShapeError, dst.ndim == 2, "dst must be 2-D, got shape ",
               dst.TensorShape::to_string());
    dst.dtype = DType(m_param.dtype);
    dst.init_contiguous_stride();
}

}  // namespace neomeg::dnn
