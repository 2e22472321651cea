// Layout rule of Split: one dst per entry of sizes, each src's shape with axis set to that size;
// the sizes must be non-negative and sum to src's axis.
#include "neomeg/dnn/operators/tensor_shape.h"

namespace neomeg::dnn {

size_t Split::num_outputs() const {
    return m_param.sizes.size();
}

void Split::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    auto ndim = static_cast<int32_t>(src.ndim);
    NM_REQUIRE(ParamError, m_param.axis >= -ndim && m_param.axis < ndim, "axis ", m_param.axis,
               " is out of range for src ", src.to_string());
    NM_REQUIRE(ParamError, !m_param.sizes.empty(), "sizes must not be empty");
    size_t axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
    int64_t total = 0;
    for (int32_t s : m_param.sizes) {
        NM_REQUIRE(ParamError, s >= 0, "sizes must be non-negative");
        total += s;
    }
    NM_REQUIRE(ShapeError, total == static_cast<int64_t>(src.shape[axis]), "sizes sum to ", total,
               " but src ", src.to_string(), " has ", src.shape[axis], " along axis ", axis);
    for (size_t i = 0; i < m_param.sizes.size(); ++i) {
        TensorShape shape = src;
        shape[axis] = static_cast<size_t>(m_param.sizes[i]);
        outputs[i] = TensorLayout(shape, src.dtype);
    }
}

}  // namespace neomeg::dnn
