// The backward rule of LSTMForward (one LSTMBackward) against central differences of the forward
// op: every input's gradient, with the gradient reaching all of y, hn and cn or only some of them
// (the rule's zeros for the others), forward and reverse, with and without bias.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/op/defs/rnn.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;

namespace {

std::vector<In> lstm_inputs(size_t t, size_t b, size_t i, size_t h, bool bias, uint32_t seed) {
    std::vector<dnn::TensorShape> shapes{{t, b, i}, {b, h}, {b, h}, {4 * h, i}, {4 * h, h}};
    if (bias)
        shapes.push_back({4 * h});
    std::vector<In> ins;
    for (size_t k = 0; k < shapes.size(); ++k)
        ins.push_back({rand_values(shapes[k], seed + 7 * static_cast<uint32_t>(k)), shapes[k]});
    return ins;
}

}  // namespace

TEST(GradRnn, LSTMAgainstFiniteDifferences) {
    for (bool bias : {true, false})
        for (bool reverse : {false, true}) {
            dnn::param::LSTM p;
            p.bias = bias;
            p.reverse = reverse;
            // which of y, hn, cn the loss reads
            for (std::vector<size_t> used : {std::vector<size_t>{0, 1, 2}, {0}, {1}, {2}, {1, 2}}) {
                std::string what = dnn::param::to_string(p) + " outputs";
                for (size_t u : used)
                    what.append(1, ' ').append(std::to_string(u));
                Fn f = [&](const std::vector<Tensor>& x) {
                    auto out = imperative::apply(ops::LSTMForward(p), x);
                    std::vector<Tensor> r;
                    for (size_t u : used)
                        r.push_back(out[u]);
                    return r;
                };
                check_grad(f, lstm_inputs(3, 2, 3, 5, bias, 11), 2e-2f, 1e-2f, what);
            }
        }
}

TEST(GradRnn, LSTMOneStepAndOneRow) {
    dnn::param::LSTM p;
    Fn f = [&](const std::vector<Tensor>& x) {
        auto out = imperative::apply(ops::LSTMForward(p), x);
        return std::vector<Tensor>{out[0], out[2]};
    };
    check_grad(f, lstm_inputs(1, 1, 2, 3, true, 5), 2e-2f, 1e-2f, "T = 1, B = 1");
}
