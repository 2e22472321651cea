// Backward rules of pooling and adaptive pooling, through their fused backward ops.
//
// The backward ops have rules too where their gradient is a forward op of the family: average
// pooling is linear, so its backward op is the forward op's adjoint and the gradient of the
// backward op with respect to diff is the forward op again (second order). Max pooling's backward
// routes diff to each window's first maximum, which is piecewise constant in src and has no
// forward op as its adjoint in diff, so its backward op stays first-order only.
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

template <class BackwardOp, class Param>
Tensor pool_backward(const Param& p, const Tensor& src, const Tensor& dst, const Tensor& diff) {
    std::array<Tensor, 3> in{src, dst, diff};
    return imperative::apply(BackwardOp(p), in)[0];
}

// dst = pool(src); the backward op recomputes max positions from src and checks dst's shape.
template <class ForwardOp, class BackwardOp>
std::vector<Tensor> pool_forward_grad(const OpDef& def, std::span<const Tensor> x,
                                      std::span<const Tensor> y, std::span<const Tensor> dy,
                                      std::span<const bool> needs) {
    if (!needs[0])
        return {Tensor()};
    const auto& p = static_cast<const ForwardOp&>(def).param();
    return {pool_backward<BackwardOp>(p, x[0], y[0], dy[0])};
}

// grad = pool_backward(src, dst, diff). For averages, grad is linear in diff and independent of
// src's and dst's values: <G, PB(diff)> = <pool(G), diff>.
template <class ForwardOp, class BackwardOp>
std::vector<Tensor> pool_backward_grad(const OpDef& def, std::span<const Tensor>,
                                       std::span<const Tensor>, std::span<const Tensor> dy,
                                       std::span<const bool> needs) {
    const auto& p = static_cast<const BackwardOp&>(def).param();
    std::vector<Tensor> g(3);
    if (!needs[2])
        return g;
    using PMode = decltype(p.mode);
    NM_THROW_IF(p.mode == PMode::MAX, NotSupportedError, def.to_string(),
                ": max pooling is differentiable once only (its backward has no gradient rule)");
    g[2] = imperative::apply(ForwardOp(p), dy.first(1))[0];
    return g;
}

}  // namespace

NM_REGISTER_GRAD(PoolingForward, (pool_forward_grad<ops::PoolingForward, ops::PoolingBackward>),
                 true, true);
NM_REGISTER_GRAD(AdaptivePoolingForward,
                 (pool_forward_grad<ops::AdaptivePoolingForward, ops::AdaptivePoolingBackward>),
                 true, true);
NM_REGISTER_GRAD(PoolingBackward, (pool_backward_grad<ops::PoolingForward, ops::PoolingBackward>),
                 false, false);
NM_REGISTER_GRAD(AdaptivePoolingBackward,
                 (pool_backward_grad<ops::AdaptivePoolingForward, ops::AdaptivePoolingBackward>),
                 false, false);

}  // namespace neomeg::imperative
