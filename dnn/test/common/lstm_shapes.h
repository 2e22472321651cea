// The LSTM param and the operands' shapes that the naive and x86 LSTM suites both build.
#pragma once

#include <cstddef>
#include <vector>

#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/params/rnn.h"

namespace neomeg::dnn::test {

// Sequence length, batch, input and hidden size.
struct LstmDims {
    size_t t, b, i, h;
};

inline param::LSTM lstm_param(bool bias, bool reverse) {
    param::LSTM p;
    p.bias = bias;
    p.reverse = reverse;
    return p;
}

// LSTMForward's inputs: x, h0, c0, w_ih, w_hh, then bias iff bias.
inline std::vector<TensorShape> lstm_forward_shapes(const LstmDims& z, bool bias) {
    std::vector<TensorShape> s{
            {z.t, z.b, z.i}, {z.b, z.h}, {z.b, z.h}, {4 * z.h, z.i}, {4 * z.h, z.h}};
    if (bias)
        s.push_back({4 * z.h});
    return s;
}

}  // namespace neomeg::dnn::test
