// Backward rules of the ops that join, split, pad, resample and copy tensors: Concat, Split,
// Padding (and PaddingBackward), Resize (and ResizeBackward), Diag, Relayout. All of them are
// linear, so each backward op's own gradient is the forward op again (higher orders work).
#include <algorithm>

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

// ResizeBackward takes its grad shape from the caller, which a plain DnnOpDef (deducing every
// output from the inputs) cannot pass; this OpDef carries that shape and runs the same kernel.
class ResizeBackwardTo final : public OpDef {
public:
    ResizeBackwardTo(const dnn::param::Resize& param, const dnn::TensorShape& grad_shape)
        : m_def(param), m_shape(grad_shape) {}

    const dnn::param::Resize& param() const { return m_def.param(); }

    OpId id() const override { return ops::ResizeBackward::kId; }
    size_t hash() const override {
        size_t h = m_def.hash();
        for (size_t i = 0; i < m_shape.ndim; ++i)
            h = h * 31 + m_shape[i];
        return h;
    }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const ResizeBackwardTo*>(&rhs);
        return r && r->m_def.is_same(m_def) && r->m_shape.eq_shape(m_shape);
    }
    std::string to_string() const override {
        return dnn::str_cat(m_def.to_string(), " to ", m_shape.to_string());
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<ResizeBackwardTo>(m_def.param(), m_shape);
    }

    std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
        NM_THROW_IF(inputs.size() != 1, ParamError, to_string(), ": expects 1 input, got ",
                    inputs.size());
        const Tensor diff = inputs[0];
        CompNode cn = diff.comp_node();
        dnn::OperatorBase& op = m_def.dnn_operator(cn.dnn_handle());
        std::array<dnn::TensorLayout, 1> in{diff.layout()}, out{};
        static_cast<dnn::TensorShape&>(out[0]) = m_shape;
        op.deduce_layout(in, out);
        Tensor grad = Tensor::empty(out[0], out[0].dtype, cn);
        std::array<dnn::TensorND, 1> in_nd{diff.dnn_tensor()}, out_nd{grad.dnn_tensor()};
        size_t ws_size = op.get_workspace_in_bytes(in, out);
        if (ws_size) {
            Blob ws(cn, ws_size);
            op.exec_unchecked(in_nd, out_nd, {ws.ptr(), ws_size});
        } else {
            op.exec_unchecked(in_nd, out_nd);
        }
        return {grad};
    }

private:
    ops::ResizeBackward m_def;
    dnn::TensorShape m_shape;
};

std::vector<Tensor> resize_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor>, std::span<const Tensor> dy,
                                std::span<const bool>) {
    const auto& p = static_cast<const ops::Resize&>(def).param();
    return {imperative::apply(ResizeBackwardTo(p, x[0].shape()), dy.first(1))[0]};
}

// Resize is linear and ResizeBackward is its adjoint, so ResizeBackward's gradient is Resize.
std::vector<Tensor> resize_backward_grad(const OpDef& def, std::span<const Tensor>,
                                         std::span<const Tensor>, std::span<const Tensor> dy,
                                         std::span<const bool>) {
    auto* shaped = dynamic_cast<const ResizeBackwardTo*>(&def);
    const auto& p = shaped ? shaped->param() : static_cast<const ops::ResizeBackward&>(def).param();
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

std::vector<Tensor> identity_grad(const OpDef&, std::span<const Tensor>, std::span<const Tensor>,
                                  std::span<const Tensor> dy, std::span<const bool>) {
    return {dy[0]};
}

}  // namespace

NM_REGISTER_GRAD(Concat, concat_grad, true, false);
NM_REGISTER_GRAD(Split, split_grad, false, false);
NM_REGISTER_GRAD(Padding, padding_grad, false, false);
NM_REGISTER_GRAD(PaddingBackward, padding_backward_grad, false, false);
NM_REGISTER_GRAD(Resize, resize_grad, true, false);
NM_REGISTER_GRAD(ResizeBackward, resize_backward_grad, false, false);
NM_REGISTER_GRAD(Diag, diag_grad, true, false);
NM_REGISTER_GRAD(Relayout, identity_grad, false, false);

}  // namespace neomeg::imperative
