// Backward rules of BatchNormForward, LayerNormForward and GroupNormForward through their fused
// backward ops, fed with the statistics the forward op returned (saved outputs), so that nothing is
// recomputed.
//
// Only dst is differentiated: the statistics outputs (batch mean and inverse std, LayerNorm's and
// GroupNorm's mean and rstd) exist for the backward op and the running-statistics update, and a
// gradient flowing into them is ignored, as in MegEngine. The running statistics get no gradient
// (they are buffers). The backward ops have no rules of their own (their gradients are not forward
// ops of the family), so these layers are differentiable once.
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

bool any_of(std::span<const bool> needs, size_t first, size_t last) {
    for (size_t i = first; i < last && i < needs.size(); ++i)
        if (needs[i])
            return true;
    return false;
}

// inputs: src, scale, bias, running_mean, running_var;
// outputs: dst, batch_mean, batch_inv_std, running_mean_out, running_var_out.
// BatchNormBackward handles both modes: in INFERENCE, batch_mean and batch_inv_std are the running
// statistics the forward used, and the statistics are constants.
std::vector<Tensor> batch_norm_grad(const OpDef& def, std::span<const Tensor> x,
                                    std::span<const Tensor> y, std::span<const Tensor> dy,
                                    std::span<const bool> needs) {
    std::vector<Tensor> g(x.size());
    if (!any_of(needs, 0, 3))
        return g;
    const auto& p = static_cast<const ops::BatchNormForward&>(def).param();
    std::array<Tensor, 5> in{dy[0], x[0], x[1], y[1], y[2]};
    auto r = imperative::apply(ops::BatchNormBackward(p), in);  // grad, dscale, dbias
    for (size_t i = 0; i < 3; ++i)
        if (needs[i])
            g[i] = r[i];
    return g;
}

// inputs: src[, weight, bias]; outputs: dst, mean, rstd. LayerNorm and GroupNorm share the form.
template <class ForwardOp, class BackwardOp>
std::vector<Tensor> norm_grad(const OpDef& def, std::span<const Tensor> x,
                              std::span<const Tensor> y, std::span<const Tensor> dy,
                              std::span<const bool> needs) {
    std::vector<Tensor> g(x.size());
    if (!any_of(needs, 0, x.size()))
        return g;
    const auto& p = static_cast<const ForwardOp&>(def).param();
    std::vector<Tensor> in{dy[0], x[0], y[1], y[2]};
    if (p.affine)
        in.push_back(x[1]);
    auto r = imperative::apply(BackwardOp(p), in);  // grad[, dweight, dbias]
    for (size_t i = 0; i < x.size(); ++i)
        if (needs[i])
            g[i] = r[i];
    return g;
}

}  // namespace

NM_REGISTER_GRAD(BatchNormForward, batch_norm_grad, true, true);
NM_REGISTER_GRAD(LayerNormForward, (norm_grad<ops::LayerNormForward, ops::LayerNormBackward>), true,
                 true);
NM_REGISTER_GRAD(GroupNormForward, (norm_grad<ops::GroupNormForward, ops::GroupNormBackward>), true,
                 true);

}  // namespace neomeg::imperative
