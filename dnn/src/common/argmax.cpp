// Layout rule of Argmax and Argmin: src's shape with the axis set to 1, int32 indices.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"

namespace neomeg::dnn {
namespace {

template <class Op>
void deduce_arg_reduce(const Op& op, std::span<const TensorLayout> inputs,
                       std::span<TensorLayout> outputs, int32_t axis_param) {
    const TensorLayout& src = inputs[0];
    size_t axis = 0;
    if (!normalize_axis(axis_param, src.ndim, axis))
        throw ParamError(str_cat(op.param_str(), ": axis ", axis_param, " is out of range for src ",
                                 src.to_string()));
    if (src.dtype.is_bool())
        throw DTypeError(
                str_cat(op.param_str(), ": dtype bool is not supported, src ", src.to_string()));
    if (src.shape[axis] == 0)
        throw ParamError(str_cat(op.param_str(), ": an empty axis ", axis,
                                 " has no index to return, src ", src.to_string()));
    outputs[0] = reduced_layout(src, axis, dtype::Int32);
}

}  // namespace

void Argmax::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    deduce_arg_reduce(*this, inputs, outputs, m_param.axis);
}

void Argmin::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    deduce_arg_reduce(*this, inputs, outputs, m_param.axis);
}

}  // namespace neomeg::dnn
