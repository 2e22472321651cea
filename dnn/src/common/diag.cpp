// Layout rule of Diag (numpy.diag): a 1-D src of length n gives an (n+|k|, n+|k|) matrix; a 2-D
// (r, c) src gives its k-th diagonal, empty when k lies outside the matrix.
#include <algorithm>
#include <cstdlib>

#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

void Diag::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim == 1 || src.ndim == 2, "src must be 1-D or 2-D, got ",
               src.to_string());
    int64_t k = m_param.k;
    if (src.ndim == 1) {
        size_t n = src.shape[0] + static_cast<size_t>(std::abs(k));
        outputs[0] = TensorLayout({n, n}, src.dtype);
        return;
    }
    int64_t r = static_cast<int64_t>(src.shape[0]), c = static_cast<int64_t>(src.shape[1]);
    int64_t len = k >= 0 ? std::min(r, c - k) : std::min(r + k, c);
    outputs[0] = TensorLayout({static_cast<size_t>(std::max<int64_t>(len, 0))}, src.dtype);
}

}  // namespace neomeg::dnn
