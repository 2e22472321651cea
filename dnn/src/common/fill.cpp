// Layout rule of Fill: dst's shape comes from the caller, its dtype from the param.
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void Fill::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0].dtype = DType(m_param.dtype);
    outputs[0].init_contiguous_stride();
}

}  // namespace neomeg::dnn
