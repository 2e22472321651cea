// Layout rule of Reduce: src's shape with the axis set to 1.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"

namespace neomeg::dnn {

void Reduce::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    size_t axis = 0;
    NM_REQUIRE(ParamError, normalize_axis(m_param.axis, src.ndim, axis), "axis ", m_param.axis,
               " is out of range for src ", src.to_string());
    NM_REQUIRE(DTypeError, !src.dtype.is_bool(), "dtype bool is not supported, src ",
               src.to_string());
    bool minmax = m_param.mode == Param::Mode::MAX || m_param.mode == Param::Mode::MIN;
    // NumPy refuses too: an empty max has no value to give.
    NM_REQUIRE(ParamError, !(minmax && src.shape[axis] == 0), to_string(m_param.mode),
               " of an empty axis ", axis, " has no identity, src ", src.to_string());
    bool int_mean = m_param.mode == Param::Mode::MEAN && src.dtype.is_int();
    outputs[0] = reduced_layout(src, axis, int_mean ? dtype::Float32 : src.dtype);
}

}  // namespace neomeg::dnn
