// Backward rules of SoftmaxForward and LogSoftmaxForward through their fused backward ops, which
// need only the forward output (saved; the input is not kept), and rules for the backward ops so
// that higher-order gradients work:
//   SoftmaxBackward(dst, diff)    = dst * (diff - s),         s = sum(diff * dst)
//   LogSoftmaxBackward(dst, diff) = diff - exp(dst) * t,      t = sum(diff)
// with sums along the axis (kept, size 1, broadcasting back). Both are linear in diff; Softmax's
// is self-adjoint, so its gradient in diff is SoftmaxBackward again.
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/reduce.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

std::vector<Tensor> softmax_grad(const OpDef& def, std::span<const Tensor>,
                                 std::span<const Tensor> y, std::span<const Tensor> dy,
                                 std::span<const bool> needs) {
    if (!needs[0])
        return {Tensor()};
    const auto& p = static_cast<const ops::SoftmaxForward&>(def).param();
    std::array<Tensor, 2> in{y[0], dy[0]};
    return {imperative::apply(*shared_op<ops::SoftmaxBackward>(p), in)[0]};
}

std::vector<Tensor> log_softmax_grad(const OpDef& def, std::span<const Tensor>,
                                     std::span<const Tensor> y, std::span<const Tensor> dy,
                                     std::span<const bool> needs) {
    if (!needs[0])
        return {Tensor()};
    const auto& p = static_cast<const ops::LogSoftmaxForward&>(def).param();
    std::array<Tensor, 2> in{y[0], dy[0]};
    return {imperative::apply(*shared_op<ops::LogSoftmaxBackward>(p), in)[0]};
}

// Sum along the softmax axis, keeping it with size 1.
Tensor sum_axis(const Tensor& t, int32_t axis) {
    dnn::param::Reduce p;
    p.mode = dnn::param::Reduce::Mode::SUM;
    p.axis = axis < 0 ? axis + static_cast<int32_t>(t.shape().ndim) : axis;
    return imperative::apply(*shared_op<ops::Reduce>(p), {&t, 1})[0];
}

// inputs: dst, diff. With dg the gradient of grad:
//   d/d diff = SoftmaxBackward(dst, dg)
//   d/d dst  = dg * (diff - s) - diff * sum(dg * dst)
std::vector<Tensor> softmax_backward_grad(const OpDef& def, std::span<const Tensor> x,
                                          std::span<const Tensor>, std::span<const Tensor> dy,
                                          std::span<const bool> needs) {
    const auto& p = static_cast<const ops::SoftmaxBackward&>(def).param();
    const Tensor &dst = x[0], &diff = x[1], &dg = dy[0];
    std::vector<Tensor> g(2);
    if (needs[0]) {
        Tensor s = sum_axis(elemwise(Mode::MUL, {diff, dst}), p.axis);
        Tensor t = sum_axis(elemwise(Mode::MUL, {dg, dst}), p.axis);
        g[0] = elemwise(Mode::SUB, {elemwise(Mode::MUL, {dg, elemwise(Mode::SUB, {diff, s})}),
                                    elemwise(Mode::MUL, {diff, t})});
    }
    if (needs[1]) {
        std::array<Tensor, 2> in{dst, dg};
        g[1] = imperative::apply(*shared_op<ops::SoftmaxBackward>(p), in)[0];
    }
    return g;
}

// inputs: dst, diff. With dg the gradient of grad:
//   d/d diff = dg - sum(dg * exp(dst))
//   d/d dst  = -dg * exp(dst) * sum(diff)
std::vector<Tensor> log_softmax_backward_grad(const OpDef& def, std::span<const Tensor> x,
                                              std::span<const Tensor>, std::span<const Tensor> dy,
                                              std::span<const bool> needs) {
    const auto& p = static_cast<const ops::LogSoftmaxBackward&>(def).param();
    const Tensor &dst = x[0], &diff = x[1], &dg = dy[0];
    Tensor e = elemwise(Mode::EXP, {dst});
    Tensor ge = elemwise(Mode::MUL, {dg, e});
    std::vector<Tensor> g(2);
    if (needs[0]) {
        Tensor t = sum_axis(diff, p.axis);
        g[0] = elemwise(Mode::NEGATE, {elemwise(Mode::MUL, {ge, t})});
    }
    if (needs[1])
        g[1] = elemwise(Mode::SUB, {dg, sum_axis(ge, p.axis)});
    return g;
}

}  // namespace

NM_REGISTER_GRAD(SoftmaxForward, softmax_grad);
NM_REGISTER_GRAD(LogSoftmaxForward, log_softmax_grad);
NM_REGISTER_GRAD(SoftmaxBackward, softmax_backward_grad);
NM_REGISTER_GRAD(LogSoftmaxBackward, log_softmax_backward_grad);

}  // namespace neomeg::imperative
