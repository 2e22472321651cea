// Backward rules of DropoutForward and DropoutBackward. The forward's gradient is DropoutBackward
// with the mask the forward drew (a saved output), so it is never redrawn; DropoutBackward is
// linear in diff and self-adjoint (an elementwise scaling), so its own gradient is itself, which
// makes every order of gradient work. The uint8 mask gets no gradient.
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/norm.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

Tensor dropout_backward(const dnn::param::Dropout& p, const Tensor& diff, const Tensor& mask) {
    std::array<Tensor, 2> in{diff, mask};
    return imperative::apply(ops::DropoutBackward(p), in)[0];
}

// outputs: dst, mask
std::vector<Tensor> dropout_grad(const OpDef& def, std::span<const Tensor>,
                                 std::span<const Tensor> y, std::span<const Tensor> dy,
                                 std::span<const bool> needs) {
    if (!needs[0])
        return {Tensor()};
    const auto& p = static_cast<const ops::DropoutForward&>(def).param();
    return {dropout_backward(p, dy[0], y[1])};
}

// inputs: diff, mask
std::vector<Tensor> dropout_backward_grad(const OpDef& def, std::span<const Tensor> x,
                                          std::span<const Tensor>, std::span<const Tensor> dy,
                                          std::span<const bool> needs) {
    if (!needs[0])
        return {Tensor(), Tensor()};
    const auto& p = static_cast<const ops::DropoutBackward&>(def).param();
    return {dropout_backward(p, dy[0], x[1]), Tensor()};
}

}  // namespace

NM_REGISTER_GRAD(DropoutForward, dropout_grad);
NM_REGISTER_GRAD(DropoutBackward, dropout_backward_grad);

}  // namespace neomeg::imperative
