// Backward rules of BatchNormForward, LayerNormForward and GroupNormForward.
//
// First order runs the fused backward op, fed with the statistics the forward op returned (saved
// outputs), so that nothing is recomputed. The backward ops have no rules of their own: their
// statistics inputs are functions of src that the forward rule does not differentiate through. So
// when another GradKey is recording this backward pass (a higher-order gradient may follow), the
// rule composes the same gradient from Elemwise/Reduce ops instead, recomputing the statistics from
// src, which every order of gradient can differentiate.
//
// Only dst is differentiated: the statistics outputs (batch mean and inverse std, LayerNorm's and
// GroupNorm's mean and rstd) exist for the backward op and the running-statistics update, and a
// gradient flowing into them is ignored, as in MegEngine. The running statistics get no gradient
// (they are buffers). So the rules take no gradient (an invalid
// Tensor) for the statistics outputs rather than the zeros the tape would otherwise fill in (four
// Fills per BatchNorm per step); dst's gradient, when absent, is still zeros, computed here.
#include "neomeg/op/defs/norm.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

// dst's gradient: zeros of dst's layout when none reached it (only statistics got gradients,
// which are ignored), so the input gradients are the zeros they always were.
Tensor dst_grad(std::span<const Tensor> y, std::span<const Tensor> dy) {
    if (dy[0].valid())
        return dy[0];
    dnn::param::Fill p;
    p.dtype = y[0].dtype().enumv();
    dnn::TensorShape shape = y[0].shape();
    return run_generator(*shared_op<ops::Fill>(p), {&shape, 1}, y[0].comp_node())[0];
}

// Mean over `axes` of t, each kept with size 1.
Tensor mean_over(Tensor t, const std::vector<int32_t>& axes) {
    for (int32_t axis : axes) {
        dnn::param::Reduce p;
        p.mode = dnn::param::Reduce::Mode::MEAN;
        p.axis = axis;
        t = imperative::apply(*shared_op<ops::Reduce>(p), {&t, 1})[0];
    }
    return t;
}

Tensor mul(const Tensor& a, const Tensor& b) {
    return elemwise(Mode::MUL, {a, b});
}

Tensor sub(const Tensor& a, const Tensor& b) {
    return elemwise(Mode::SUB, {a, b});
}

// 1 / sqrt(var + eps)
Tensor rsqrt_eps(const Tensor& var, float eps) {
    return elemwise(Mode::RSQRT, {elemwise(Mode::ADD, {var, scalar_like(var, eps)})});
}

// dst = xhat * w + b with xhat = (x - mean) * rstd, the statistics of x over `axes`: dx from
// dst's gradient dy, and xhat (the scale's gradient is dy * xhat reduced to its shape). w is
// broadcastable to x (invalid: no scale).
struct ComposedGrads {
    Tensor dx, xhat;
};

ComposedGrads composed_norm_grad(const Tensor& dy, const Tensor& x, const Tensor& w,
                                 const std::vector<int32_t>& axes, float eps) {
    Tensor xc = sub(x, mean_over(x, axes));
    Tensor rstd = rsqrt_eps(mean_over(mul(xc, xc), axes), eps);
    Tensor xhat = mul(xc, rstd);
    Tensor gy = w.valid() ? mul(dy, w) : dy;
    // dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
    Tensor t = sub(sub(gy, mean_over(gy, axes)), mul(xhat, mean_over(mul(gy, xhat), axes)));
    return {mul(rstd, t), xhat};
}

// The shape {1, C, 1, ...} of src's rank, for a per-channel tensor to broadcast against src.
dnn::TensorShape channel_shape(const dnn::TensorShape& src) {
    dnn::TensorShape s = src;
    for (size_t i = 0; i < s.ndim; ++i)
        if (i != 1)
            s[i] = 1;
    return s;
}

std::vector<int32_t> range(size_t first, size_t last) {
    std::vector<int32_t> r;
    for (size_t i = first; i < last; ++i)
        r.push_back(static_cast<int32_t>(i));
    return r;
}

bool any_of(std::span<const bool> needs, size_t first, size_t last) {
    for (size_t i = first; i < last && i < needs.size(); ++i)
        if (needs[i])
            return true;
    return false;
}

// BatchNormForward's gradient composed from Elemwise/Reduce ops. The per-channel tensors are
// {C} or {1, C, 1, ...}; they broadcast against src as the latter.
std::vector<Tensor> batch_norm_composed_grad(const dnn::param::BatchNorm& p,
                                             std::span<const Tensor> x, const Tensor& dy,
                                             std::span<const bool> needs) {
    const Tensor &src = x[0], &scale = x[1];
    dnn::TensorShape ch = channel_shape(src.shape());
    Tensor w = type_cvt(reshape(scale, ch), src.dtype());
    std::vector<int32_t> axes = range(2, src.shape().ndim);
    axes.push_back(0);
    ComposedGrads c;
    if (p.fwd_mode == dnn::param::BatchNorm::FwdMode::TRAINING) {
        c = composed_norm_grad(dy, src, w, axes, p.epsilon);
    } else {  // the running statistics are constants
        Tensor mean = type_cvt(reshape(x[3], ch), src.dtype());
        Tensor rstd = rsqrt_eps(type_cvt(reshape(x[4], ch), src.dtype()), p.epsilon);
        c.dx = mul(dy, mul(w, rstd));
        c.xhat = mul(sub(src, mean), rstd);
    }
    std::vector<Tensor> g(x.size());
    if (needs[0])
        g[0] = c.dx;
    if (needs[1])
        g[1] = reshape(type_cvt(reduce_to(mul(dy, c.xhat), ch), scale.dtype()), scale.shape());
    if (needs[2])
        g[2] = reshape(type_cvt(reduce_to(dy, ch), x[2].dtype()), x[2].shape());
    return g;
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
    if (GradKey::any_active())
        return batch_norm_composed_grad(p, x, dst_grad(y, dy), needs);
    std::array<Tensor, 5> in{dst_grad(y, dy), x[0], x[1], y[1], y[2]};
    auto r = imperative::apply(*shared_op<ops::BatchNormBackward>(p), in);  // grad, dscale, dbias
    for (size_t i = 0; i < 3; ++i)
        if (needs[i])
            g[i] = r[i];
    return g;
}

// LayerNormForward's gradient composed from Elemwise/Reduce ops: rows are the trailing
// normalized_dim axes, which weight's shape broadcasts against.
std::vector<Tensor> composed_grad(const dnn::param::LayerNorm& p, std::span<const Tensor> x,
                                  const Tensor& dy) {
    const Tensor& src = x[0];
    size_t nd = src.shape().ndim;
    Tensor w = p.affine ? x[1] : Tensor();
    ComposedGrads c = composed_norm_grad(dy, src, w, range(nd - p.normalized_dim, nd), p.eps);
    if (!p.affine)
        return {c.dx};
    return {c.dx, reduce_to(mul(dy, c.xhat), x[1].shape()), reduce_to(dy, x[2].shape())};
}

// GroupNormForward's gradient composed from Elemwise/Reduce ops: src (N, C, ...) is viewed as
// (N, group, C / group * rest) and normalised over the last axis; weight is per channel.
std::vector<Tensor> composed_grad(const dnn::param::GroupNorm& p, std::span<const Tensor> x,
                                  const Tensor& dy) {
    const Tensor& src = x[0];
    const dnn::TensorShape& shape = src.shape();
    size_t n = shape[0], group = p.group;
    size_t groups = n * group;
    dnn::TensorShape rows{n, group, groups != 0 ? shape.total_nr_elems() / groups : 0};
    Tensor gy = dy;
    if (p.affine)  // applied before the regrouping, where weight broadcasts per channel
        gy = mul(dy, reshape(x[1], channel_shape(shape)));
    ComposedGrads c =
            composed_norm_grad(reshape(gy, rows), reshape(src, rows), Tensor(), {2}, p.eps);
    Tensor dx = reshape(c.dx, shape);
    if (!p.affine)
        return {dx};
    Tensor dy_xhat = mul(dy, reshape(c.xhat, shape));
    dnn::TensorShape ch = channel_shape(shape);
    return {dx, reshape(reduce_to(dy_xhat, ch), x[1].shape()),
            reshape(reduce_to(dy, ch), x[2].shape())};
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
    std::vector<Tensor> r;
    if (GradKey::any_active()) {
        r = composed_grad(p, x, dst_grad(y, dy));
    } else {
        std::vector<Tensor> in{dst_grad(y, dy), x[0], y[1], y[2]};
        if (p.affine)
            in.push_back(x[1]);
        r = imperative::apply(BackwardOp(p), in);  // grad[, dweight, dbias]
    }
    for (size_t i = 0; i < x.size(); ++i)
        if (needs[i])
            g[i] = r[i];
    return g;
}

}  // namespace

NM_REGISTER_GRAD(BatchNormForward, batch_norm_grad);
NM_REGISTER_GRAD(LayerNormForward, (norm_grad<ops::LayerNormForward, ops::LayerNormBackward>));
NM_REGISTER_GRAD(GroupNormForward, (norm_grad<ops::GroupNormForward, ops::GroupNormBackward>));

}  // namespace neomeg::imperative
