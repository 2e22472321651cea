// Layout rules of LSTMForward/Backward: every tensor float32; the sizes T, B, I and H come from x
// (T, B, I) and h0 (B, H) in the forward, from x and w_ih (4H, I) in the backward, and every other
// tensor must have the shape they give it.
#include "neomeg/dnn/operators/rnn.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_f32(const OperatorBase& op, const TensorLayout& l, const char* name) {
    NM_OP_REQUIRE(op, DTypeError, l.dtype == dtype::Float32, name, " ", l.to_string(),
                  " is not float32");
}

void check_shape(const OperatorBase& op, const TensorLayout& l, const char* name,
                 const TensorShape& want) {
    check_f32(op, l, name);
    NM_OP_REQUIRE(op, ShapeError, l.eq_shape(want), name, " ", l.to_string(), " is not ",
                  want.to_string());
}

void check_x(const OperatorBase& op, const TensorLayout& x) {
    check_f32(op, x, "x");
    NM_OP_REQUIRE(op, ShapeError, x.ndim == 3, "x ", x.to_string(),
                  " is not (seq_len, batch, input_size)");
}

}  // namespace

void LSTMForward::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_count(*this, inputs, m_param.bias ? 6 : 5);
    const TensorLayout &x = inputs[0], &h0 = inputs[1];
    check_x(*this, x);
    check_f32(*this, h0, "h0");
    NM_OP_REQUIRE(*this, ShapeError, h0.ndim == 2 && h0[0] == x[1], "h0 ", h0.to_string(),
                  " is not (batch, hidden_size) for x ", x.to_string());
    size_t t = x[0], b = x[1], i = x[2], h = h0[1];
    check_shape(*this, inputs[2], "c0", {b, h});
    check_shape(*this, inputs[3], "w_ih", {4 * h, i});
    check_shape(*this, inputs[4], "w_hh", {4 * h, h});
    if (m_param.bias)
        check_shape(*this, inputs[5], "bias", {4 * h});
    outputs[0] = TensorLayout({t, b, h}, dtype::Float32);
    outputs[1] = TensorLayout({b, h}, dtype::Float32);
    outputs[2] = TensorLayout({b, h}, dtype::Float32);
    outputs[3] = TensorLayout({t, b, 7 * h}, dtype::Float32);
}

size_t LSTMBackward::num_outputs() const {
    return m_param.bias ? 6 : 5;
}

void LSTMBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                 std::span<TensorLayout> outputs) {
    check_count(*this, inputs, 7);
    const TensorLayout &x = inputs[0], &w_ih = inputs[1];
    check_x(*this, x);
    check_f32(*this, w_ih, "w_ih");
    NM_OP_REQUIRE(*this, ShapeError, w_ih.ndim == 2 && w_ih[0] % 4 == 0 && w_ih[1] == x[2], "w_ih ",
                  w_ih.to_string(), " is not (4 * hidden_size, input_size) for x ", x.to_string());
    size_t t = x[0], b = x[1], i = x[2], h = w_ih[0] / 4;
    check_shape(*this, inputs[2], "w_hh", {4 * h, h});
    check_shape(*this, inputs[3], "reserve", {t, b, 7 * h});
    check_shape(*this, inputs[4], "dy", {t, b, h});
    check_shape(*this, inputs[5], "dhn", {b, h});
    check_shape(*this, inputs[6], "dcn", {b, h});
    outputs[0] = TensorLayout({t, b, i}, dtype::Float32);
    outputs[1] = TensorLayout({b, h}, dtype::Float32);
    outputs[2] = TensorLayout({b, h}, dtype::Float32);
    outputs[3] = TensorLayout({4 * h, i}, dtype::Float32);
    outputs[4] = TensorLayout({4 * h, h}, dtype::Float32);
    if (m_param.bias)
        outputs[5] = TensorLayout({4 * h}, dtype::Float32);
}

}  // namespace neomeg::dnn
