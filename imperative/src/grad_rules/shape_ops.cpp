// Backward rules of the value-shaped ops (dnn/ops/defs/tensor_shape.py). ReshapeTo's gradient
// reshapes to the input's shape *as a value* (GetVarShape), so that a traced graph keeps following
// its inputs' shapes; the shape and count inputs have no gradient.
#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/trace.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
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

Tensor shape_at(const Tensor& t, std::vector<int32_t> axes) {
    dnn::param::GetVarShape p;
    p.axes = std::move(axes);
    return imperative::apply(ops::GetVarShape(p), {&t, 1})[0];
}

// The taken prefix's gradient, then zeros up to src's rows. Their count is a value
// (src.shape[0] - dy.shape[0]), so a traced graph pads to src's rows whatever count a run takes.
std::vector<Tensor> take_prefix_grad(const OpDef&, std::span<const Tensor> x,
                                     std::span<const Tensor>, std::span<const Tensor> dy,
                                     std::span<const bool>) {
    // The backward pass's other rules fix the prefix's length in their params (a mean's
    // divisor, a broadcast's shape), so a graph of it would be wrong for another count.
    if (TraceRecorder* r = TraceRecorder::current())
        r->fail("trace: a gradient through a shape that depends on data (cond_take, non_zero)");
    const Tensor& src = x[0];
    size_t ndim = src.shape().ndim;
    Tensor shape = elemwise(Mode::SUB, {shape_at(src, {0}), shape_at(dy[0], {0})});
    if (ndim > 1) {
        std::vector<int32_t> rest;
        for (size_t i = 1; i < ndim; ++i)
            rest.push_back(static_cast<int32_t>(i));
        std::vector<Tensor> parts{shape, shape_at(src, rest)};
        shape = imperative::apply(ops::Concat(dnn::param::Concat{}), parts)[0];
    }
    dnn::TensorShape zeros_shape = src.shape();
    zeros_shape[0] -= dy[0].shape()[0];
    dnn::param::Fill fp;
    fp.dtype = src.dtype().enumv();
    dnn::TensorShape one{1};
    Tensor zero = run_generator(ops::Fill(fp), {&one, 1}, src.comp_node())[0];
    std::vector<Tensor> bin{zero, shape};
    Tensor zeros = imperative::apply(ops::BroadcastTo(), bin, {&zeros_shape, 1})[0];
    std::vector<Tensor> parts{dy[0], zeros};
    return {imperative::apply(ops::Concat(dnn::param::Concat{}), parts)[0], Tensor()};
}

}  // namespace

NM_REGISTER_GRAD(ReshapeTo, reshape_to_grad);
NM_REGISTER_GRAD(BroadcastTo, broadcast_to_grad);
NM_REGISTER_GRAD(TakePrefix, take_prefix_grad);

}  // namespace neomeg::imperative
