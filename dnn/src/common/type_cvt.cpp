// Layout rule of TypeCvt: dst has src's shape and the param's dtype; every pair of dtypes converts.
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void TypeCvt::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] =
            TensorLayout(inputs[0], DType::make(m_param.dtype, m_param.scale, m_param.zero_point));
}

}  // namespace neomeg::dnn
