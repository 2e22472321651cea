// Backward rule of LSTMForward: one LSTMBackward from the forward's inputs and its reserve output
// (saved), with zeros for the outputs no gradient reached (hn and cn when only the sequence is
// used, the common case; the reserve never gets one).
//
// LSTMBackward has no rule of its own, so a gradient of this gradient (another GradKey recording
// the backward pass) does not reach the LSTM's inputs through it.
#include <algorithm>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/rnn.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

Tensor grad_or_zeros(const Tensor& y, const Tensor& dy) {
    if (dy.valid())
        return dy;
    dnn::param::Fill p;
    p.dtype = y.dtype().enumv();
    dnn::TensorShape shape = y.shape();
    return run_generator(*shared_op<ops::Fill>(p), {&shape, 1}, y.comp_node())[0];
}

// inputs: x, h0, c0, w_ih, w_hh[, bias]; outputs: y, hn, cn, reserve. LSTMBackward's outputs are
// the inputs' gradients in the same order.
std::vector<Tensor> lstm_grad(const OpDef& def, std::span<const Tensor> x,
                              std::span<const Tensor> y, std::span<const Tensor> dy,
                              std::span<const bool> needs) {
    std::vector<Tensor> g(x.size());
    if (std::find(needs.begin(), needs.end(), true) == needs.end())
        return g;
    const auto& p = static_cast<const ops::LSTMForward&>(def).param();
    std::vector<Tensor> in{x[0],
                           x[3],
                           x[4],
                           y[3],
                           grad_or_zeros(y[0], dy[0]),
                           grad_or_zeros(y[1], dy[1]),
                           grad_or_zeros(y[2], dy[2])};
    std::vector<Tensor> r = imperative::apply(*shared_op<ops::LSTMBackward>(p), in);
    for (size_t i = 0; i < x.size(); ++i)
        if (needs[i])
            g[i] = r[i];
    return g;
}

}  // namespace

NM_REGISTER_GRAD(LSTMForward, lstm_grad);

}  // namespace neomeg::imperative
