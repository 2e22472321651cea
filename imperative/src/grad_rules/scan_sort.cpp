// Backward rules of Reduce MAX/MIN/PRODUCT (reduce.cpp's default case calls them), Cumsum, TopK,
// Argsort, BatchedMatrixMul and Dot.
//
// Reduce MAX/MIN: every element equal to the result gets the whole output gradient, ties
// included, as MegBrain's Reduce gradient (og * (x == y)); a tie of n elements thus passes n
// times dy back, where the one-sided derivatives would split it.
// Sorting ops (TopK, Argsort) route each output value's gradient back to the element it came
// from, by scattering with the output indices.
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "ops_util.h"

namespace neomeg::imperative {

using namespace grad_util;

namespace {

template <class Op>
Tensor run1(const typename Op::Param& p, std::vector<Tensor> in) {
    return imperative::apply(*shared_op<Op>(p), in)[0];
}

Tensor zeros_like(const Tensor& t) {
    dnn::param::Fill p;
    p.dtype = t.dtype().enumv();
    dnn::TensorShape shape = t.shape();
    return run_generator(ops::Fill(p), {&shape, 1}, t.comp_node())[0];
}

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) {
    return elemwise(Mode::COND, {mask, a, b});
}

// Scatters `dvalues` into zeros shaped like `src` along the last axis at `indices`.
Tensor scatter_last_axis(const Tensor& src, const Tensor& indices, const Tensor& dvalues) {
    dnn::param::Scatter p;
    p.axis = -1;
    p.mode = dnn::param::Scatter::Mode::ADD;
    return run1<ops::Scatter>(p, {zeros_like(src), indices, dvalues});
}

}  // namespace

std::vector<Tensor> reduce_more_grad(const OpDef& def, std::span<const Tensor> x,
                                     std::span<const Tensor> y, std::span<const Tensor> dy,
                                     std::span<const bool>) {
    const auto& p = static_cast<const ops::Reduce&>(def).param();
    using RMode = dnn::param::Reduce::Mode;
    const Tensor& src = x[0];
    const dnn::TensorShape& shape = src.shape();
    Tensor zero = scalar_like(src, 0);
    switch (p.mode) {
        case RMode::MAX:
        case RMode::MIN: {
            Tensor hit = elemwise(Mode::EQ, {src, broadcast_to(y[0], shape)});
            return {where(hit, broadcast_to(dy[0], shape), zero)};
        }
        case RMode::PRODUCT: {
            // d/dx_i = product of the others. y / x_i fails at zeros, so: with no zero along the
            // axis it is p / x_i; with one zero, the zero's gradient is the product p of the
            // nonzero elements and the others get 0; with more zeros everything gets 0.
            Tensor is_zero = elemwise(Mode::EQ, {src, zero});
            Tensor one = scalar_like(src, 1);
            Tensor nonzero = where(is_zero, one, src);
            Tensor prod = run1<ops::Reduce>(p, {nonzero});
            dnn::param::Reduce sum_p = p;
            sum_p.mode = RMode::SUM;
            Tensor zeros_n = run1<ops::Reduce>(sum_p, {type_cvt(is_zero, src.dtype())});
            Tensor others = where(elemwise(Mode::EQ, {zeros_n, zero}),
                                  elemwise(Mode::TRUE_DIV, {prod, nonzero}), zero);
            Tensor at_zero = where(elemwise(Mode::EQ, {zeros_n, one}), prod, zero);
            Tensor d = where(is_zero, broadcast_to(at_zero, shape), others);
            return {elemwise(Mode::MUL, {d, broadcast_to(dy[0], shape)})};
        }
        default:
            throw dnn::NotSupportedError(dnn::str_cat(def.to_string(), ": no backward rule"));
    }
}

namespace {

// y_i = sum_{j <= i} x_j gives dx_j = sum_{i >= j} dy_i: the same scan in the other direction.
std::vector<Tensor> cumsum_grad(const OpDef& def, std::span<const Tensor>, std::span<const Tensor>,
                                std::span<const Tensor> dy, std::span<const bool>) {
    auto p = static_cast<const ops::Cumsum&>(def).param();
    p.reverse = !p.reverse;
    return {run1<ops::Cumsum>(p, {dy[0]})};
}

std::vector<Tensor> topk_grad(const OpDef& def, std::span<const Tensor> x,
                              std::span<const Tensor> y, std::span<const Tensor> dy,
                              std::span<const bool>) {
    auto p = static_cast<const ops::TopK&>(def).param();
    const Tensor& src = x[0];
    if (p.mode != dnn::param::TopK::Mode::KTH_ONLY)
        return {scatter_last_axis(src, y[1], dy[0])};
    // KTH_ONLY has no indices: rank again (the same stable order) and keep the k-th column.
    p.mode = dnn::param::TopK::Mode::VALUE_IDX_SORTED;
    Tensor idx = imperative::apply(ops::TopK(p), {&src, 1})[1];
    size_t k = idx.shape()[idx.shape().ndim - 1];
    if (k > 1) {
        dnn::param::Split sp;
        sp.axis = -1;
        sp.sizes = {static_cast<int32_t>(k - 1), 1};
        idx = imperative::apply(ops::Split(sp), {&idx, 1})[1];
    }
    return {scatter_last_axis(src, idx, reshape(dy[0], idx.shape()))};
}

std::vector<Tensor> argsort_grad(const OpDef&, std::span<const Tensor> x, std::span<const Tensor> y,
                                 std::span<const Tensor> dy, std::span<const bool>) {
    return {scatter_last_axis(x[0], y[1], dy[0])};
}

Tensor bmm(const Tensor& a, const Tensor& b, bool ta, bool tb, const dnn::param::MatrixMul& base) {
    dnn::param::MatrixMul p = base;
    p.transposeA = ta;
    p.transposeB = tb;
    return run1<ops::BatchedMatrixMul>(p, {a, b});
}

// As MatrixMul (matmul.cpp), per batch.
std::vector<Tensor> batched_matmul_grad(const OpDef& def, std::span<const Tensor> x,
                                        std::span<const Tensor>, std::span<const Tensor> dy,
                                        std::span<const bool> needs) {
    const auto& p = static_cast<const ops::BatchedMatrixMul&>(def).param();
    const Tensor &a = x[0], &b = x[1], &dc = dy[0];
    bool ta = p.transposeA, tb = p.transposeB;
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = ta ? bmm(b, dc, tb, true, p) : bmm(dc, b, false, !tb, p);
    if (needs[1])
        g[1] = tb ? bmm(dc, a, true, ta, p) : bmm(a, dc, !ta, false, p);
    return g;
}

std::vector<Tensor> dot_grad(const OpDef&, std::span<const Tensor> x, std::span<const Tensor>,
                             std::span<const Tensor> dy, std::span<const bool> needs) {
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = elemwise(Mode::MUL, {dy[0], x[1]});
    if (needs[1])
        g[1] = elemwise(Mode::MUL, {dy[0], x[0]});
    return g;
}

}  // namespace

NM_REGISTER_GRAD(Cumsum, cumsum_grad);
NM_REGISTER_GRAD(TopK, topk_grad);
NM_REGISTER_GRAD(Argsort, argsort_grad);
NM_REGISTER_GRAD(BatchedMatrixMul, batched_matmul_grad);
NM_REGISTER_GRAD(Dot, dot_grad);

}  // namespace neomeg::imperative
