// Backward rules of the value-shaped ops (dnn/ops/defs/tensor_shape.py). ReshapeTo's gradient
// reshapes to the input's shape *as a value* (GetVarShape), so that a traced graph keeps following
// its inputs' shapes; the shape and count inputs have no gradient.
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

std::vector<Tensor> reshape_to_grad(const OpDef&, std::span<const Tensor> x,
                                    std::span<const Tensor>, std::span<const Tensor> dy,
                                    std::span<const bool>) {
    Tensor shape = imperative::apply(ops::GetVarShape(), x.first(1))[0];
    std::vector<Tensor> in{dy[0], shape};
    dnn::TensorShape target = x[0].shape();
    return {imperative::apply(ops::ReshapeTo(), in, {&target, 1})[0], Tensor()};
}

std::vector<Tensor> broadcast_to_grad(const OpDef&, std::span<const Tensor> x,
                                      std::span<const Tensor>, std::span<const Tensor> dy,
                                      std::span<const bool>) {
    return {reduce_to(dy[0], x[0].shape()), Tensor()};
}

// The taken prefix's gradient, zeros after it.
std::vector<Tensor> take_prefix_grad(const OpDef&, std::span<const Tensor> x,
                                     std::span<const Tensor>, std::span<const Tensor> dy,
                                     std::span<const bool>) {
    const dnn::TensorShape& src = x[0].shape();
    dnn::param::Padding p;
    p.front_offsets.assign(src.ndim, 0);
    p.back_offsets.assign(src.ndim, 0);
    p.back_offsets[0] = static_cast<int32_t>(src[0] - dy[0].shape()[0]);
    return {imperative::apply(ops::Padding(p), dy.first(1))[0], Tensor()};
}

}  // namespace

NM_REGISTER_GRAD(ReshapeTo, reshape_to_grad, true, false);
NM_REGISTER_GRAD(BroadcastTo, broadcast_to_grad, true, false);
NM_REGISTER_GRAD(TakePrefix, take_prefix_grad, true, false);

}  // namespace neomeg::imperative
