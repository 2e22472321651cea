// The elementwise part of an LSTM step on float32 rows (Highway, the instruction set chosen at run
// time): the gates' activations and the cell update forward, the gates' gradients backward. The
// products around them (x W_ih^T, h W_hh^T and their gradients) are the caller's GEMMs.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Where one step of LSTMForward reads and writes, for `rows` rows of `hs` units. `res` is the
// step's first reserve row (stride 7 * hs): it holds the pre-activations a (x W_ih^T + h W_hh^T,
// bias not yet added) in its first 4 * hs floats and the state before the step (h, c) at 4 * hs
// and 5 * hs. The step writes the activated gates i, f, g, o over a, tanh(c') at 6 * hs, h' to y
// (stride hs) and, where not null, h' and c' to h_next and c_next (stride next_stride: the next
// step's reserve row, or the final state).
struct LstmStepForward {
    float* res;
    const float* bias;  // 4 * hs, or null
    float* y;
    float *h_next, *c_next;
    size_t next_stride;
    size_t rows, hs;
};
void lstm_step_forward(const LstmStepForward& s);

// One step of LSTMBackward: from the step's reserve rows `res` (stride 7 * hs), dy (stride hs) and
// the gradients dh, dc of the state after the step (stride hs), writes the gradients of the
// pre-activations to dg (stride 4 * hs) and replaces dc by the gradient of the state's c before the
// step (dh's is dg W_hh, the caller's product).
struct LstmStepBackward {
    const float* res;
    const float* dy;
    const float* dh;
    float* dc;
    float* dg;
    size_t rows, hs;
};
void lstm_step_backward(const LstmStepBackward& s);

}  // namespace neomeg::dnn::x86
