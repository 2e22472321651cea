// Layout rule of Cumsum: dst has src's shape and dtype.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"

namespace neomeg::dnn {

void Cumsum::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    size_t axis = 0;
    NM_REQUIRE(ParamError, normalize_axis(m_param.axis, src.ndim, axis), "axis ", m_param.axis,
               " is out of range for src ", src.to_string());
    NM_REQUIRE(DTypeError, !src.dtype.is_bool(), "dtype bool is not supported, src ",
               src.to_string());
    outputs[0] = TensorLayout(src, src.dtype);
}

}  // namespace neomeg::dnn
