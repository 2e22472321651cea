// Layout rules of SoftmaxForward/Backward and LogSoftmaxForward/Backward: dst has src's shape and
// dtype; the backward ops take the forward output and its gradient, of one shape and dtype.
#include "neomeg/dnn/operators/norm.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_axis(const OperatorBase& op, const TensorLayout& src, int32_t axis) {
    auto n = static_cast<int32_t>(src.ndim);
    NM_OP_REQUIRE(op, ParamError, axis >= -n && axis < n, "axis ", axis,
                  " is out of range for src ", src.to_string());
}

void deduce_forward(const OperatorBase& op, int32_t axis, std::span<const TensorLayout> inputs,
                    std::span<TensorLayout> outputs) {
    check_count(op, inputs, 1);
    check_float(op, inputs[0], "src");
    check_axis(op, inputs[0], axis);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

void deduce_backward(const OperatorBase& op, int32_t axis, std::span<const TensorLayout> inputs,
                     std::span<TensorLayout> outputs) {
    check_count(op, inputs, 2);
    check_float(op, inputs[0], "dst");
    check_same_dtype(op, inputs[0], "dst", inputs[1], "diff");
    check_same_shape(op, inputs[0], "dst", inputs[1], "diff");
    check_axis(op, inputs[0], axis);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

}  // namespace

void SoftmaxForward::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    deduce_forward(*this, m_param.axis, inputs, outputs);
}
void SoftmaxBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    deduce_backward(*this, m_param.axis, inputs, outputs);
}
void LogSoftmaxForward::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    deduce_forward(*this, m_param.axis, inputs, outputs);
}
void LogSoftmaxBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                       std::span<TensorLayout> outputs) {
    deduce_backward(*this, m_param.axis, inputs, outputs);
}

}  // namespace neomeg::dnn
