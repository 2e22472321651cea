// Backward rules of fake quantization (dnn/ops/defs/quantization.py), as MegEngine's: FakeQuant
// passes the gradient straight through for src only; TQT and LSQ also learn their scale, whose
// per-element gradient the backward op gives and the rule sums to scale's (broadcast) shape.
// zero_point and LSQ's grad_scale get none. The backward ops have no rules of their own.
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/quantization.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

std::vector<Tensor> fake_quant_grad(const OpDef& def, std::span<const Tensor> x,
                                    std::span<const Tensor>, std::span<const Tensor> dy,
                                    std::span<const bool> needs) {
    const auto& p = static_cast<const ops::FakeQuant&>(def).param();
    std::vector<Tensor> grads(x.size());
    if (needs[0]) {
        Tensor in[] = {dy[0], x[0], x[1], x[2]};
        grads[0] = imperative::apply(ops::FakeQuantBackward(p), in)[0];
    }
    return grads;
}

// Runs a backward op giving (grad_src, grad_scale) and keeps what is needed, grad_scale summed
// over the axes scale was broadcast along.
template <class BackwardOp>
std::vector<Tensor> with_scale_grad(const BackwardOp& op, std::vector<Tensor> in,
                                    std::span<const Tensor> x, std::span<const bool> needs) {
    std::vector<Tensor> grads(x.size());
    if (!needs[0] && !needs[1])
        return grads;
    auto out = imperative::apply(op, in);
    if (needs[0])
        grads[0] = out[0];
    if (needs[1])
        grads[1] = grad_util::reduce_to(out[1], x[1].shape());
    return grads;
}

std::vector<Tensor> tqt_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                             std::span<const Tensor> dy, std::span<const bool> needs) {
    const auto& p = static_cast<const ops::TQT&>(def).param();
    return with_scale_grad(ops::TQTBackward(p), {dy[0], x[0], x[1]}, x, needs);
}

std::vector<Tensor> lsq_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                             std::span<const Tensor> dy, std::span<const bool> needs) {
    const auto& p = static_cast<const ops::LSQ&>(def).param();
    return with_scale_grad(ops::LSQBackward(p), {dy[0], x[0], x[1], x[2], x[3]}, x, needs);
}

}  // namespace

NM_REGISTER_GRAD(FakeQuant, fake_quant_grad);
NM_REGISTER_GRAD(TQT, tqt_grad);
NM_REGISTER_GRAD(LSQ, lsq_grad);

}  // namespace neomeg::imperative
