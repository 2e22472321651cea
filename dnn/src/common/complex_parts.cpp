// Layout rules of CreateComplex and ComplexPart: float32 parts on one side, complex64 on the
// other, of one (broadcast) shape.
#include <vector>

#include "neomeg/dnn/operators/elemwise.h"

namespace neomeg::dnn {

void CreateComplex::deduce_layout(std::span<const TensorLayout> inputs,
                                  std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    // float32 only, as MegEngine: complex64's parts are float32.
    NM_REQUIRE(DTypeError, inputs[0].dtype == dtype::Float32 && inputs[1].dtype == dtype::Float32,
               "real and imag must be float32, got ", layouts_str(inputs));
    TensorShape shape;
    try {
        shape = broadcast_shapes({inputs[0], inputs[1]});
    } catch (const ShapeError&) {
        NM_REQUIRE(ShapeError, false,
                   "real and imag cannot be broadcast together: ", layouts_str(inputs));
    }
    outputs[0] = TensorLayout(shape, dtype::Complex64);
}

void ComplexPart::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    NM_REQUIRE(DTypeError, inputs[0].dtype == dtype::Complex64, "src must be complex64, got ",
               inputs[0].to_string());
    outputs[0] = TensorLayout(inputs[0], dtype::Float32);
}

}  // namespace neomeg::dnn
