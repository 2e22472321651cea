// Layout rule of CheckNonFinite: any number of float inputs, one int32 flag of shape {1}.
#include "neomeg/dnn/operators/random.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {

void CheckNonFinite::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    for (size_t i = 0; i < inputs.size(); ++i)
        NM_OP_REQUIRE(*this, DTypeError, inputs[i].dtype.is_float(), "input ", i, " ",
                      inputs[i].to_string(), " is not a float dtype");
    outputs[0] = TensorLayout({1}, dtype::Int32);
}

}  // namespace neomeg::dnn
