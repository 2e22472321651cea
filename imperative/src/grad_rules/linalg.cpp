// Backward rules of MatrixInverse and SVD, from matrix products on 2-D or (flattened batch, rows,
// cols) views.
#include <array>

#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

// op(a) @ op(b) for matrices (..., r, c) of equal batch shape, as MatrixMul on 2-D operands and
// BatchedMatrixMul on the batch flattened to one axis otherwise.
Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
    dnn::param::MatrixMul p;
    p.transposeA = ta;
    p.transposeB = tb;
    const size_t nd = a.shape().ndim;
    if (nd == 2) {
        std::array<Tensor, 2> in{a, b};
        return imperative::apply(ops::MatrixMul(p), in)[0];
    }
    auto flat = [](const Tensor& t) {
        const auto& s = t.shape();
        size_t batch = 1;
        for (size_t i = 0; i + 2 < s.ndim; ++i)
            batch *= s[i];
        return reshape(t, dnn::TensorShape{batch, s[s.ndim - 2], s[s.ndim - 1]});
    };
    std::array<Tensor, 2> in{flat(a), flat(b)};
    Tensor c = imperative::apply(ops::BatchedMatrixMul(p), in)[0];
    dnn::TensorShape out = a.shape();
    out[nd - 2] = c.shape()[1];
    out[nd - 1] = c.shape()[2];
    return reshape(c, out);
}

// y = x^-1 gives dx = -y^T @ dy @ y^T.
std::vector<Tensor> matrix_inverse_grad(const OpDef&, std::span<const Tensor>,
                                        std::span<const Tensor> y, std::span<const Tensor> dy,
                                        std::span<const bool>) {
    const Tensor& inv = y[0];
    Tensor t = matmul(inv, dy[0], true, false);
    return {elemwise(Mode::NEGATE, {matmul(t, inv, false, true)})};
}

// Singular values only (compute_uv=false): dA = U diag(dS) Vh, U and Vh recomputed. The gradient
// through U and Vh is not implemented: with compute_uv, backward through SVD throws.
std::vector<Tensor> svd_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                             std::span<const Tensor> dy, std::span<const bool>) {
    const auto& p = static_cast<const ops::SVD&>(def).param();
    NM_THROW_IF(p.compute_uv, NotSupportedError, def.to_string(),
                ": not differentiable with compute_uv=true (only the singular values of "
                "compute_uv=false have a gradient)");
    dnn::param::SVD full;
    full.compute_uv = true;
    full.full_matrices = false;
    auto usv = imperative::apply(ops::SVD(full), {&x[0], 1});
    const Tensor &u = usv[0], &vh = usv[2], &ds = dy[0];
    // U diag(dS) scales column j of U by dS[..., j]: dS as (..., 1, K) broadcasts over rows.
    dnn::TensorShape row = ds.shape();
    row.ndim += 1;
    row[row.ndim - 1] = row[row.ndim - 2];
    row[row.ndim - 2] = 1;
    Tensor scaled = elemwise(Mode::MUL, {u, reshape(ds, row)});
    return {matmul(scaled, vh, false, false)};
}

}  // namespace

NM_REGISTER_GRAD(MatrixInverse, matrix_inverse_grad, false, true);
NM_REGISTER_GRAD(SVD, svd_grad, true, false);

}  // namespace neomeg::imperative
