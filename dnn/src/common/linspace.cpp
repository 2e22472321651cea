// Layout rule of Linspace: the caller sets dst's 1-D shape; the dtype is the param's (float only).
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void Linspace::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    TensorLayout& dst = outputs[0];
    NM_REQUIRE(ShapeError, dst.ndim == 1, "dst must be 1-D, got shape ",
               dst.TensorShape::to_string());
    DType dt(m_param.dtype);
    NM_REQUIRE(DTypeError, dt.is_float(), "dtype ", dt.name(), " is not supported (float only)");
    dst.dtype = dt;
    dst.init_contiguous_stride();
}

}  // namespace neomeg::dnn
