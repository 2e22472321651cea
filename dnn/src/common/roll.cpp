// Layout rule of Roll: one shift per axis, every axis inside src (a repeated one is allowed, as
// numpy.roll allows it); dst is contiguous with src's shape and dtype.
#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {

void Roll::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ParamError, m_param.shift.size() == m_param.axis.size(), m_param.shift.size(),
               " shifts for ", m_param.axis.size(), " axes");
    auto ndim = static_cast<int32_t>(src.ndim);
    for (int32_t a : m_param.axis)
        NM_REQUIRE(ParamError, a >= -ndim && a < ndim, "axis ", a, " is out of range for src ",
                   src.to_string());
    TensorShape shape = src;
    outputs[0] = TensorLayout(shape, src.dtype);
}

}  // namespace neomeg::dnn
