// Layout rules of FakeQuant, TQT, LSQ and their backward operators. src (and diff) are float
// tensors; scale, zero_point and grad_scale are float tensors that broadcast to src's shape; every
// output has src's shape and dtype.
#include "neomeg/dnn/operators/quantization.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_range(const OperatorBase& op, const param::FakeQuant& p) {
    NM_OP_REQUIRE(op, ParamError, p.qmin <= p.qmax, "qmin ", p.qmin, " is above qmax ", p.qmax);
}

// Whether `a` broadcasts to exactly `target` (NumPy's rule, without growing target).
bool broadcasts_to(const TensorShape& a, const TensorShape& target) {
    if (a.ndim > target.ndim)
        return false;
    size_t lead = target.ndim - a.ndim;
    for (size_t d = 0; d < a.ndim; ++d)
        if (a[d] != 1 && a[d] != target[lead + d])
            return false;
    return true;
}

// Checks src and the per-element parameters inputs[first..]; returns src's layout as the outputs'.
TensorLayout check(const OperatorBase& op, const param::FakeQuant& p,
                   std::span<const TensorLayout> inputs, size_t src_index, size_t expected,
                   const char* const* names) {
    check_count(op, inputs, expected);
    check_range(op, p);
    const TensorLayout& src = inputs[src_index];
    check_float(op, src, "src");
    for (size_t i = 0; i < expected; ++i) {
        if (i == src_index)
            continue;
        check_float(op, inputs[i], names[i]);
        bool fits = broadcasts_to(inputs[i], src);
        if (i == 0 && src_index == 1)  // diff
            fits = inputs[i].eq_shape(src);
        NM_OP_REQUIRE(op, ShapeError, fits, names[i], " ", inputs[i].to_string(),
                      " does not broadcast to src ", src.to_string());
    }
    return TensorLayout(src, src.dtype);
}

}  // namespace

void FakeQuant::deduce_layout(std::span<const TensorLayout> inputs,
                              std::span<TensorLayout> outputs) {
    static const char* const names[] = {"src", "scale", "zero_point"};
    outputs[0] = check(*this, m_param, inputs, 0, 3, names);
}

void FakeQuantBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    static const char* const names[] = {"diff", "src", "scale", "zero_point"};
    outputs[0] = check(*this, m_param, inputs, 1, 4, names);
}

void TQT::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    static const char* const names[] = {"src", "scale"};
    outputs[0] = check(*this, m_param, inputs, 0, 2, names);
}

void TQTBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    static const char* const names[] = {"diff", "src", "scale"};
    outputs[0] = outputs[1] = check(*this, m_param, inputs, 1, 3, names);
}

void LSQ::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    static const char* const names[] = {"src", "scale", "zero_point", "grad_scale"};
    outputs[0] = check(*this, m_param, inputs, 0, 4, names);
}

void LSQBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    static const char* const names[] = {"diff", "src", "scale", "zero_point", "grad_scale"};
    outputs[0] = outputs[1] = check(*this, m_param, inputs, 1, 5, names);
}

}  // namespace neomeg::dnn
