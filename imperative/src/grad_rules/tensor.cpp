// Backward rules of the ops that join, split, pad, resample and copy tensors: Concat, Split,
// Padding (and PaddingBackward), Resize (and ResizeBackward), Roll, Diag, Relayout. All of them are
// linear, so each backward op's own gradient is the forward op again (higher orders work).
#include <algorithm>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

size_t norm_axis(int32_t axis, size_t ndim) {
    return static_cast<size_t>(axis < 0 ? axis + static_cast<int32_t>(ndim) : axis);
}

std::vector<Tensor> concat_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor>, std::span<const Tensor> dy,
                                std::span<const bool> needs) {
    dnn::param::Split p;
    p.axis = static_cast<const ops::Concat&>(def).param().axis;
    size_t axis = norm_axis(p.axis, x[0].shape().ndim);
    for (const Tensor& t : x)
        p.sizes.push_back(static_cast<int32_t>(t.shape()[axis]));
    auto pieces = imperative::apply(ops::Split(p), dy.first(1));
    for (size_t i = 0; i < pieces.size(); ++i)
        if (!needs[i])
            pieces[i] = Tensor();
    return pieces;
}

// The tape gives zeros for outputs that received no gradient, so every dy is valid.
std::vector<Tensor> split_grad(const OpDef& def, std::span<const Tensor>, std::span<const Tensor>,
                               std::span<const Tensor> dy, std::span<const bool>) {
    dnn::param::Concat p;
    p.axis = static_cast<const ops::Split&>(def).param().axis;
    return {imperative::apply(ops::Concat(p), dy)[0]};
}

std::vector<Tensor> padding_grad(const OpDef& def, std::span<const Tensor>, std::span<const Tensor>,
                                 std::span<const Tensor> dy, std::span<const bool>) {
    return {imperative::apply(ops::PaddingBackward(static_cast<const ops::Padding&>(def).param()),
                              dy.first(1))[0]};
}

// PaddingBackward is the adjoint of Padding's linear part: its own adjoint pads with zeros
// (CONSTANT's border value is a constant, not a copy of src).
std::vector<Tensor> padding_backward_grad(const OpDef& def, std::span<const Tensor>,
                                          std::span<const Tensor>, std::span<const Tensor> dy,
                                          std::span<const bool>) {
    auto p = static_cast<const ops::PaddingBackward&>(def).param();
    p.value = 0;
    return {imperative::apply(ops::Padding(p), dy.first(1))[0]};
}

std::vector<Tensor> resize_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor>, std::span<const Tensor> dy,
                                std::span<const bool>) {
    // ResizeBackward cannot deduce its grad shape from diff: the input's shape is preset.
    const auto& p = static_cast<const ops::Resize&>(def).param();
    dnn::TensorShape shape = x[0].shape();
    return {imperative::apply(ops::ResizeBackward(p), dy.first(1), {&shape, 1})[0]};
}

// Resize is linear and ResizeBackward is its adjoint, so ResizeBackward's gradient is Resize.
std::vector<Tensor> resize_backward_grad(const OpDef& def, std::span<const Tensor>,
                                         std::span<const Tensor>, std::span<const Tensor> dy,
                                         std::span<const bool>) {
    const auto& p = static_cast<const ops::ResizeBackward&>(def).param();
    return {imperative::apply(ops::Resize(p), dy.first(1))[0]};
}

// Crops (Split, first piece) or zero-pads `t` along `axis` to length n.
Tensor fit_axis(const Tensor& t, size_t axis, size_t n) {
    size_t have = t.shape()[axis];
    if (have > n) {
        dnn::param::Split p;
        p.axis = static_cast<int32_t>(axis);
        p.sizes = {static_cast<int32_t>(n), static_cast<int32_t>(have - n)};
        return imperative::apply(ops::Split(p), {&t, 1})[0];
    }
    if (have < n) {
        dnn::param::Padding p;
        p.front_offsets.assign(t.shape().ndim, 0);
        p.back_offsets.assign(t.shape().ndim, 0);
        p.back_offsets[axis] = static_cast<int32_t>(n - have);
        return imperative::apply(ops::Padding(p), {&t, 1})[0];
    }
    return t;
}

// 1-D src: the gradient is dy's k-th diagonal. 2-D src: dy goes back onto the k-th diagonal of a
// zero matrix; Diag builds a square one, which holds every diagonal element within its top-left
// (r, c) corner, so cropping or zero-padding it to (r, c) gives the gradient.
std::vector<Tensor> diag_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                              std::span<const Tensor> dy, std::span<const bool>) {
    const auto& p = static_cast<const ops::Diag&>(def).param();
    Tensor g = imperative::apply(ops::Diag(p), dy.first(1))[0];
    if (x[0].shape().ndim == 2) {
        g = fit_axis(g, 0, x[0].shape()[0]);
        g = fit_axis(g, 1, x[0].shape()[1]);
    }
    return {g};
}

// Rolling back: each listed shift negated (modulo its axis's size, so that INT32_MIN negates too).
std::vector<Tensor> roll_grad(const OpDef& def, std::span<const Tensor>, std::span<const Tensor>,
                              std::span<const Tensor> dy, std::span<const bool>) {
    dnn::param::Roll p = static_cast<const ops::Roll&>(def).param();
    const dnn::TensorShape& shape = dy[0].shape();
    for (size_t i = 0; i < p.shift.size(); ++i) {
        auto n = static_cast<int64_t>(shape[norm_axis(p.axis[i], shape.ndim)]);
        p.shift[i] = n == 0 ? 0 : -static_cast<int32_t>((p.shift[i] % n + n) % n);
    }
    return {imperative::apply(ops::Roll(p), dy.first(1))[0]};
}

std::vector<Tensor> identity_grad(const OpDef&, std::span<const Tensor>, std::span<const Tensor>,
                                  std::span<const Tensor> dy, std::span<const bool>) {
    return {dy[0]};
}

}  // namespace

NM_REGISTER_GRAD(Concat, concat_grad);
NM_REGISTER_GRAD(Split, split_grad);
NM_REGISTER_GRAD(Padding, padding_grad);
NM_REGISTER_GRAD(PaddingBackward, padding_backward_grad);
NM_REGISTER_GRAD(Resize, resize_grad);
NM_REGISTER_GRAD(ResizeBackward, resize_backward_grad);
NM_REGISTER_GRAD(Roll, roll_grad);
NM_REGISTER_GRAD(Diag, diag_grad);
NM_REGISTER_GRAD(Relayout, identity_grad);

}  // namespace neomeg::imperative
