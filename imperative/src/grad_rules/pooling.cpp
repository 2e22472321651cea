// Backward rules of pooling and adaptive pooling, through their fused backward ops.
//
// The backward ops have rules too, for higher orders. Average pooling is linear, so its backward
// op is the forward op's adjoint and the backward op's gradient in diff is the forward op again.
// Max pooling's backward routes diff to each window's first maximum, piecewise constant in src (no
// gradient there); its adjoint in diff picks the gradient at each window's maximum, which ops with
// rules express only when windows do not overlap (below). Otherwise, and for adaptive max pooling,
// a second-order gradient is refused rather than silently dropped.
#include <functional>
#include <numeric>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

template <class BackwardOp, class Param>
Tensor pool_backward(const Param& p, const Tensor& src, const Tensor& dst, const Tensor& diff) {
    std::array<Tensor, 3> in{src, dst, diff};
    return imperative::apply(*shared_op<BackwardOp>(p), in)[0];
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

// Windows that do not overlap put every src element in at most one window, so
// M = PoolingBackward(src, dst, ones) marks each window's first maximum, and picking dg at the
// maxima is the window sum of dg * M: an average pooling (padding counted) times the window size.
Tensor max_pool_diff_grad(const OpDef& def, const dnn::param::Pooling& p, const Tensor& src,
                          const Tensor& dst, const Tensor& dg) {
    bool overlap = false;
    for (size_t d = 0; d < p.window.size(); ++d)
        overlap |= p.stride[d] < p.window[d];
    NM_THROW_IF(overlap, NotSupportedError, def.to_string(),
                ": the second-order gradient of max pooling needs windows that do not overlap "
                "(stride >= window)");
    dnn::param::Fill one;
    one.value = 1;
    one.dtype = dst.dtype().enumv();
    dnn::TensorShape shape = dst.shape();
    Tensor ones = run_generator(ops::Fill(one), {&shape, 1}, dst.comp_node())[0];
    // M is piecewise constant in src: computed off the tape.
    Tensor m = pool_backward<ops::PoolingBackward>(p, src.detach(), dst.detach(), ones);
    dnn::param::Pooling avg = p;
    avg.mode = dnn::param::Pooling::Mode::AVERAGE;
    Tensor gm = elemwise(Mode::MUL, {dg, m});
    Tensor sum = imperative::apply(ops::PoolingForward(avg), {&gm, 1})[0];
    auto size = std::accumulate(p.window.begin(), p.window.end(), 1, std::multiplies<>());
    return elemwise(Mode::MUL, {sum, scalar_like(sum, static_cast<float>(size))});
}

Tensor max_pool_diff_grad(const OpDef& def, const dnn::param::AdaptivePooling&, const Tensor&,
                          const Tensor&, const Tensor&) {
    throw dnn::NotSupportedError(
            dnn::str_cat(def.to_string(),
                         ": adaptive max pooling is differentiable once only (its windows "
                         "may overlap; no op with a rule picks the gradient at their maxima)"));
}

// grad = pool_backward(src, dst, diff), linear in diff. For averages it is independent of src's
// and dst's values, and <dg, PB(diff)> = <pool(dg), diff>. For maxima it is piecewise constant in
// src and dst (no gradient).
template <class ForwardOp, class BackwardOp>
std::vector<Tensor> pool_backward_grad(const OpDef& def, std::span<const Tensor> x,
                                       std::span<const Tensor>, std::span<const Tensor> dy,
                                       std::span<const bool> needs) {
    const auto& p = static_cast<const BackwardOp&>(def).param();
    std::vector<Tensor> g(3);
    if (!needs[2])
        return g;
    using PMode = decltype(p.mode);
    if (p.mode == PMode::MAX)
        g[2] = max_pool_diff_grad(def, p, x[0], x[1], dy[0]);
    else
        g[2] = imperative::apply(ForwardOp(p), dy.first(1))[0];
    return g;
}

}  // namespace

NM_REGISTER_GRAD(PoolingForward, (pool_forward_grad<ops::PoolingForward, ops::PoolingBackward>));
NM_REGISTER_GRAD(AdaptivePoolingForward,
                 (pool_forward_grad<ops::AdaptivePoolingForward, ops::AdaptivePoolingBackward>));
NM_REGISTER_GRAD(PoolingBackward, (pool_backward_grad<ops::PoolingForward, ops::PoolingBackward>));
NM_REGISTER_GRAD(AdaptivePoolingBackward,
                 (pool_backward_grad<ops::AdaptivePoolingForward, ops::AdaptivePoolingBackward>));

}  // namespace neomeg::imperative
