// Layout rule of MatrixInverse: a batch of square float matrices (..., n, n) gives the same
// shape and dtype.
#include "neomeg/dnn/operators/linalg.h"

namespace neomeg::dnn {

void MatrixInverse::deduce_layout(std::span<const TensorLayout> inputs,
                                  std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim >= 2 && src[src.ndim - 1] == src[src.ndim - 2],
               "src must be a square matrix or a batch of them (..., n, n), got ", src.to_string());
    NM_REQUIRE(DTypeError, src.dtype.is_float(), "src must be float, got ", src.to_string());
    outputs[0] = TensorLayout(src, src.dtype);
}

}  // namespace neomeg::dnn
