// Backward rules of MatrixInverse and SVD, from matrix products on 2-D or (flattened batch, rows,
// cols) views.
#include <algorithm>
#include <array>
#include <utility>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"
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
        return imperative::apply(*shared_op<ops::MatrixMul>(p), in)[0];
    }
    auto flat = [](const Tensor& t) {
        const auto& s = t.shape();
        size_t batch = 1;
        for (size_t i = 0; i + 2 < s.ndim; ++i)
            batch *= s[i];
        return reshape(t, dnn::TensorShape{batch, s[s.ndim - 2], s[s.ndim - 1]});
    };
    std::array<Tensor, 2> in{flat(a), flat(b)};
    Tensor c = imperative::apply(*shared_op<ops::BatchedMatrixMul>(p), in)[0];
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

// The last two axes of a (..., r, c) tensor swapped.
Tensor transpose_last2(const Tensor& t) {
    param::Dimshuffle p;
    const auto nd = static_cast<int32_t>(t.shape().ndim);
    for (int32_t i = 0; i < nd; ++i)
        p.pattern.push_back(i);
    std::swap(p.pattern[nd - 2], p.pattern[nd - 1]);
    return imperative::apply(ops::Dimshuffle(p), {&t, 1})[0];
}

// s (..., k) as (..., 1, k) (scales columns) or (..., k, 1) (scales rows).
Tensor as_row(const Tensor& s) {
    dnn::TensorShape shape = s.shape();
    shape.ndim += 1;
    shape[shape.ndim - 1] = shape[shape.ndim - 2];
    shape[shape.ndim - 2] = 1;
    return reshape(s, shape);
}
Tensor as_col(const Tensor& s) {
    dnn::TensorShape shape = s.shape();
    shape[shape.ndim] = 1;
    shape.ndim += 1;
    return reshape(s, shape);
}

Tensor eye_like(const Tensor& s) {
    const size_t k = s.shape()[s.shape().ndim - 1];
    dnn::param::Eye p;
    p.dtype = s.dtype().enumv();
    dnn::TensorShape shape{k, k};
    return run_generator(ops::Eye(p), {&shape, 1}, s.comp_node())[0];
}

// The thin SVD A = U diag(S) Vh (A m x n, k = min(m, n)) differentiated as in Townsend,
// "Differentiating the Singular Value Decomposition" (2016), real case, with F_ij = 1 / (S_j^2 -
// S_i^2):
//   dA = U [ (F o skew(U^T dU)) S + S (F o skew(V^T dV)) + diag(dS) ] Vh
//        + (I - U U^T) dU S^-1 Vh          (only when m > k)
//        + U S^-1 dVh (I - V Vh)           (only when n > k)
// with skew(X) = X - X^T. Repeated singular values make F infinite, as in every framework: the
// singular vectors are not unique there. With compute_uv=false only dS flows. U and Vh are
// recomputed from A (the kernel is deterministic, so they are the forward's, signs included).
std::vector<Tensor> svd_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                             std::span<const Tensor> dy, std::span<const bool>) {
    const auto& p = static_cast<const ops::SVD&>(def).param();
    const auto& a = x[0].shape();
    const size_t m = a[a.ndim - 2], n = a[a.ndim - 1], k = std::min(m, n);
    // The extra columns of a full U (rows of a full Vh) are any orthonormal completion: no
    // gradient is defined through them.
    NM_THROW_IF(p.compute_uv && p.full_matrices && m != n, NotSupportedError, def.to_string(),
                ": backward through the completed singular vectors of a non-square matrix is not "
                "defined; use full_matrices=false");
    dnn::param::SVD thin;
    thin.compute_uv = true;
    thin.full_matrices = false;
    auto usv = imperative::apply(ops::SVD(thin), {&x[0], 1});
    const Tensor &u = usv[0], &s = usv[1], &vh = usv[2];
    const Tensor& ds = p.compute_uv ? dy[1] : dy[0];
    Tensor inner = elemwise(Mode::MUL, {eye_like(s), as_row(ds)});  // diag(dS)
    if (p.compute_uv) {
        const Tensor &du = dy[0], &dvh = dy[2];
        Tensor s2 = elemwise(Mode::MUL, {s, s});
        // 1 / (S_j^2 - S_i^2 + I): the identity keeps the diagonal finite; skew(.) is 0 there.
        Tensor f = elemwise(Mode::SUB, {as_row(s2), as_col(s2)});
        f = elemwise(Mode::TRUE_DIV, {scalar_like(s, 1.f), elemwise(Mode::ADD, {f, eye_like(s)})});
        auto skew = [](const Tensor& t) { return elemwise(Mode::SUB, {t, transpose_last2(t)}); };
        Tensor j = elemwise(Mode::MUL, {f, skew(matmul(u, du, true, false))});
        Tensor kk = elemwise(Mode::MUL, {f, skew(matmul(vh, dvh, false, true))});  // V^T dV
        inner = elemwise(Mode::ADD, {inner, elemwise(Mode::MUL, {j, as_row(s)})});
        inner = elemwise(Mode::ADD, {inner, elemwise(Mode::MUL, {as_col(s), kk})});
        Tensor da = matmul(matmul(u, inner, false, false), vh, false, false);
        if (m > k) {
            Tensor dus = elemwise(Mode::TRUE_DIV, {du, as_row(s)});
            Tensor proj = elemwise(Mode::SUB,
                                   {dus, matmul(u, matmul(u, dus, true, false), false, false)});
            da = elemwise(Mode::ADD, {da, matmul(proj, vh, false, false)});
        }
        if (n > k) {
            Tensor dvs = elemwise(Mode::TRUE_DIV, {dvh, as_col(s)});
            Tensor proj = elemwise(Mode::SUB,
                                   {dvs, matmul(matmul(dvs, vh, false, true), vh, false, false)});
            da = elemwise(Mode::ADD, {da, matmul(u, proj, false, false)});
        }
        return {da};
    }
    return {matmul(matmul(u, inner, false, false), vh, false, false)};
}

}  // namespace

NM_REGISTER_GRAD(MatrixInverse, matrix_inverse_grad);
NM_REGISTER_GRAD(SVD, svd_grad);

}  // namespace neomeg::imperative
