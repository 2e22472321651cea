// Layout rule of SVD: src (..., M, N) gives U (..., M, K), S (..., K), Vh (..., K, N) with
// K = min(M, N); full_matrices makes U (..., M, M) and Vh (..., N, N); without compute_uv only S.
#include <algorithm>

#include "neomeg/dnn/operators/linalg.h"

namespace neomeg::dnn {

size_t SVD::num_outputs() const {
    return m_param.compute_uv ? 3 : 1;
}

void SVD::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim >= 2,
               "src must be a matrix or a batch of them (..., M, N), got ", src.to_string());
    NM_REQUIRE(DTypeError, src.dtype.is_float(), "src must be float, got ", src.to_string());
    const size_t m = src[src.ndim - 2], n = src[src.ndim - 1], k = std::min(m, n);
    TensorShape s = src;  // the batch axes, then the matrix axes set below
    s.ndim -= 1;
    s[s.ndim - 1] = k;
    if (!m_param.compute_uv) {
        outputs[0] = TensorLayout(s, src.dtype);
        return;
    }
    const bool full = m_param.full_matrices;
    TensorShape u = src, vh = src;
    u[u.ndim - 1] = full ? m : k;
    vh[vh.ndim - 2] = full ? n : k;
    outputs[0] = TensorLayout(u, src.dtype);
    outputs[1] = TensorLayout(s, src.dtype);
    outputs[2] = TensorLayout(vh, src.dtype);
}

}  // namespace neomeg::dnn
