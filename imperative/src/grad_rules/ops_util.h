// Small op builders that backward rules compose. Everything goes through apply(), so a backward
// pass is itself recorded by any other active GradKey (higher-order gradients).
#pragma once

#include <initializer_list>
#include <vector>

#include "../shared_op.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

namespace neomeg::imperative::grad_util {

using Mode = dnn::param::Elemwise::Mode;

inline Tensor elemwise(Mode mode, std::initializer_list<Tensor> inputs) {
    dnn::param::Elemwise p;
    p.mode = mode;
    std::vector<Tensor> in(inputs);
    return imperative::apply(*shared_op<ops::Elemwise>(p), in)[0];
}

inline Tensor reshape(const Tensor& t, const dnn::TensorShape& shape) {
    param::Reshape p;
    for (size_t i = 0; i < shape.ndim; ++i)
        p.shape.push_back(static_cast<int32_t>(shape[i]));
    return imperative::apply(ops::Reshape(p), {&t, 1})[0];
}

inline Tensor broadcast_to(const Tensor& t, const dnn::TensorShape& shape) {
    if (t.shape().eq_shape(shape))
        return t;
    param::Broadcast p;
    for (size_t i = 0; i < shape.ndim; ++i)
        p.shape.push_back(static_cast<int32_t>(shape[i]));
    return imperative::apply(ops::Broadcast(p), {&t, 1})[0];
}

// One float32 part of a complex64 tensor.
inline Tensor complex_part(const Tensor& z, dnn::param::ComplexPart::Part part) {
    dnn::param::ComplexPart p;
    p.part = part;
    return imperative::apply(*shared_op<ops::ComplexPart>(p), {&z, 1})[0];
}

// real + i * imag, float32 parts broadcast together.
inline Tensor create_complex(const Tensor& real, const Tensor& imag) {
    std::vector<Tensor> in{real, imag};
    return imperative::apply(*shared_op<ops::CreateComplex>(dnn::param::Empty{}), in)[0];
}

// The complex conjugate; a real tensor itself.
inline Tensor conj(const Tensor& t) {
    if (!t.dtype().is_complex())
        return t;
    using Part = dnn::param::ComplexPart::Part;
    return create_complex(complex_part(t, Part::REAL),
                          elemwise(Mode::NEGATE, {complex_part(t, Part::IMAG)}));
}

// Sums `g` over the axes along which an input of shape `target` was broadcast to g's shape.
inline Tensor reduce_to(const Tensor& g, const dnn::TensorShape& target) {
    if (g.shape().eq_shape(target))
        return g;
    if (g.dtype().is_complex()) {  // Reduce takes no complex: the parts are summed one by one
        using Part = dnn::param::ComplexPart::Part;
        return create_complex(reduce_to(complex_part(g, Part::REAL), target),
                              reduce_to(complex_part(g, Part::IMAG), target));
    }
    Tensor r = g;
    size_t lead = g.shape().ndim - target.ndim;
    for (size_t i = 0; i < g.shape().ndim; ++i) {
        bool broadcast = i < lead || (target[i - lead] == 1 && g.shape()[i] != 1);
        if (!broadcast)
            continue;
        dnn::param::Reduce p;
        p.mode = dnn::param::Reduce::Mode::SUM;
        p.axis = static_cast<int32_t>(i);
        r = imperative::apply(*shared_op<ops::Reduce>(p),
                              {&r, 1})[0];  // keeps the axis with size 1
    }
    return reshape(r, target);
}

inline Tensor type_cvt(const Tensor& t, dnn::DType dtype) {
    if (t.dtype() == dtype)
        return t;
    dnn::param::TypeCvt p;
    p.dtype = dtype.enumv();
    return imperative::apply(*shared_op<ops::TypeCvt>(p), {&t, 1})[0];
}

inline Tensor scalar_like(const Tensor& t, float value) {
    dnn::param::Fill p;
    p.value = value;
    p.dtype = t.dtype().enumv();
    dnn::TensorShape one{};  // 0-d, broadcasts against anything
    return run_generator(*shared_op<ops::Fill>(p), {&one, 1}, t.comp_node())[0];
}

}  // namespace neomeg::imperative::grad_util

// In a rules file: NM_REGISTER_GRAD(Elemwise, elemwise_grad). What the rule saves and whether it
// takes absent gradients are the op's definition's (grad=Grad(...) in dnn/ops/defs or
// src/ops/defs); an op whose definition declares no gradient fails to compile here.
#define NM_REGISTER_GRAD_CAT2(a, b) a##b
#define NM_REGISTER_GRAD_CAT(a, b) NM_REGISTER_GRAD_CAT2(a, b)
#define NM_REGISTER_GRAD(Op, fn)                                                             \
    static_assert(::neomeg::kGradDecl<::neomeg::imperative::ops::Op>.differentiable,         \
                  #Op "'s definition declares no gradient: add grad=Grad(...) to its op()"); \
    [[maybe_unused]] static const bool NM_REGISTER_GRAD_CAT(nm_grad_registered_, __LINE__) = \
            ::neomeg::imperative::register_grad_rule(::neomeg::imperative::ops::Op::kId, fn)
