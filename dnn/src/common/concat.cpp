// Layout rule of Concat: at least one src, all of one dtype and rank, equal in every dim but
// axis; dst's axis is the sum of theirs.
#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {

void Concat::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    NM_REQUIRE(ShapeError, !inputs.empty(), "needs at least one input");
    const TensorLayout& first = inputs[0];
    auto ndim = static_cast<int32_t>(first.ndim);
    NM_REQUIRE(ParamError, m_param.axis >= -ndim && m_param.axis < ndim, "axis ", m_param.axis,
               " is out of range for inputs ", layouts_str(inputs));
    size_t axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
    TensorShape shape = first;
    shape[axis] = 0;
    for (const TensorLayout& l : inputs) {
        NM_REQUIRE(DTypeError, l.dtype == first.dtype,
                   "inputs differ in dtype: ", layouts_str(inputs));
        bool match = l.ndim == first.ndim;
        for (size_t d = 0; match && d < l.ndim; ++d)
            match = d == axis || l.shape[d] == first.shape[d];
        NM_REQUIRE(ShapeError, match, "inputs must match in every dim but axis ", axis, ": ",
                   layouts_str(inputs));
        shape[axis] += l.shape[axis];
    }
    outputs[0] = TensorLayout(shape, first.dtype);
}

}  // namespace neomeg::dnn
