// Layout rule of Relayout: dst has src's shape and dtype; exec accepts dst with any strides.
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void Relayout::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

}  // namespace neomeg::dnn
