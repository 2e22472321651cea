// Layout propagation through a training step (propagate_channel_blocked): a residual block's
// forward (conv -> BatchNorm -> relu -> conv -> add -> relu) and its backward (the relu masks,
// BatchNorm's backward, both backward convolutions), before and after the pass: every op of
// the step runs blocked, with conversions only at its edges (the image and the incoming gradient
// in, the result out), the filter and BatchNorm gradients and statistics plain; and the results
// equal the unoptimised graph's. Blocks of 8 and 16, channel counts that fill their last block and
// that do not, both BatchNorm modes.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

using BnMode = dnn::param::BatchNorm::FwdMode;

ops::ConvolutionForward conv() {
    dnn::param::Convolution p;
    p.padding = {1, 1};
    return ops::ConvolutionForward(p);
}

template <class Op>
Op conv_backward() {
    dnn::param::Convolution p;
    p.padding = {1, 1};
    return Op(p);
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

struct Step {
    ComputingGraph g;
    std::vector<VarNode*> outs;
    std::map<const VarNode*, std::vector<float>> in;

    Step(size_t c, BnMode mode, std::mt19937& rng) {
        const dnn::TensorShape img{2, 3, 5, 7}, act{2, c, 5, 7}, pc{1, c, 1, 1};
        auto* x = g.input("x", img, dnn::dtype::Float32, cpu());
        auto* dy = g.input("dy", act, dnn::dtype::Float32, cpu());
        auto* w1 = g.input("w1", {c, 3, 3, 3}, dnn::dtype::Float32, cpu());
        auto* w2 = g.input("w2", {c, c, 3, 3}, dnn::dtype::Float32, cpu());
        auto* scale = g.input("scale", pc, dnn::dtype::Float32, cpu());
        auto* bias = g.input("bias", pc, dnn::dtype::Float32, cpu());
        auto* rm = g.input("rm", pc, dnn::dtype::Float32, cpu());
        auto* rv = g.input("rv", pc, dnn::dtype::Float32, cpu());
        for (VarNode* v : {x, dy, w1, w2, scale, bias, rm})
            in[v] = random_floats(v->shape().total_nr_elems(), rng);
        in[rv] = random_floats(c, rng, 0.5f, 2.f);
        dnn::param::BatchNorm bp;
        bp.fwd_mode = mode;
        auto* c1 = g.insert1(conv(), {x, w1});
        const auto bn = g.insert(ops::BatchNormForward(bp), {c1, scale, bias, rm, rv});
        auto* r = g.insert1(elemwise(Mode::RELU), {bn[0]});
        auto* c2 = g.insert1(conv(), {r, w2});
        auto* s = g.insert1(elemwise(Mode::ADD), {c2, r});
        auto* y = g.insert1(elemwise(Mode::RELU), {s});
        y->set_name("y");
        // Backward from dy: the relu masks read the relus' outputs (mask_relu_grads's form).
        auto* ds = g.insert1(elemwise(Mode::SWITCH_GT0), {y, dy});
        auto* dw2 = g.insert1(conv_backward<ops::ConvolutionBackwardFilter>(), {r, ds});
        auto* dr1 = g.insert1(conv_backward<ops::ConvolutionBackwardData>(), {w2, ds});
        auto* dr = g.insert1(elemwise(Mode::ADD), {dr1, ds});
        auto* dbn = g.insert1(elemwise(Mode::SWITCH_GT0), {r, dr});
        const auto bwd = g.insert(ops::BatchNormBackward(bp), {dbn, c1, scale, bn[1], bn[2]});
        auto* dw1 = g.insert1(conv_backward<ops::ConvolutionBackwardFilter>(), {x, bwd[0]});
        outs = {y, dw1, dw2, bwd[1], bwd[2], bn[3], bn[4]};
    }
};

}  // namespace

TEST(PassChannelBlocked, TrainingStepRunsBlockedWithConversionsOnlyAtItsEdges) {
    std::mt19937 rng(17);
    for (size_t block : {8, 16})
        for (size_t c : {16, 20})
            for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE}) {
                SCOPED_TRACE(testing::Message() << "block " << block << ", C " << c << ", mode "
                                                << static_cast<int>(mode));
                Step st(c, mode, rng);
                const std::string before = st.g.dump(st.outs);
                EXPECT_EQ(count(before, "= ConvolutionForward("), 2u) << before;
                EXPECT_EQ(count(before, "= BatchNormForward("), 1u) << before;
                EXPECT_EQ(count(before, "= BatchNormBackward("), 1u) << before;
                EXPECT_EQ(count(before, "= ConvolutionBackwardFilter("), 2u) << before;
                EXPECT_EQ(count(before, "= ConvolutionBackwardData("), 1u) << before;
                auto want = reference_eval(st.g, st.outs, st.in);

                // Every op of the step: 2 convolutions, BatchNorm, 2 relus, the add, 2 masks,
                // the gradients' add, BatchNorm's backward, 3 backward convolutions.
                EXPECT_EQ(propagate_channel_blocked(st.g, st.outs, block), 13u);
                const std::string after = st.g.dump(st.outs);
                EXPECT_EQ(count(after, "= ConvBiasBlocked("), 2u) << after;
                EXPECT_EQ(count(after, "= BatchNormForwardBlocked("), 1u) << after;
                EXPECT_EQ(count(after, "= BatchNormBackwardBlocked("), 1u) << after;
                EXPECT_EQ(count(after, "= ConvolutionBackwardFilterBlocked("), 2u) << after;
                EXPECT_EQ(count(after, "= ConvolutionBackwardDataBlocked("), 1u) << after;
                // In: the incoming gradient (for the mask) and the image (for w1's gradient; the
                // first convolution reads it plain). Out: y only.
                EXPECT_EQ(count(after, "ChannelBlock("), 2u) << after;
                EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
                for (const char* plain :
                     {"= ConvolutionForward(", "= BatchNormForward(", "= BatchNormBackward(",
                      "= ConvolutionBackwardData(", "= ConvolutionBackwardFilter("})
                    EXPECT_EQ(count(after, plain), 0u) << after;

                expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);
            }
}

// compile() on the backend's own block: the blocked step gives the unoptimised graph's results.
TEST(PassChannelBlocked, CompiledTrainingStepMatchesTheUnoptimisedGraph) {
    std::mt19937 rng(19);
    Step st(20, BnMode::TRAINING, rng);
    auto want = reference_eval(st.g, st.outs, st.in);
    auto exe = st.g.compile(st.outs);
    const std::string d = exe->dump();
    if (cpu().dnn_handle()->preferred_channel_block() != 0) {
        EXPECT_EQ(count(d, "= BatchNormBackwardBlocked("), 1u) << d;
    }
    for (auto& [v, values] : st.in)
        exe->set_input(v->name(), tensor(values, v->shape()));
    exe->execute();
    for (size_t i = 0; i < st.outs.size(); ++i)
        expect_near(floats(exe->output(i)), want[i], 2e-4f);
}

// A tensor of fewer channels than half a block is not converted into the blocked layout: LeNet's
// 6-channel backward stays plain (its forward chain is blocked as before), and the results agree.
TEST(PassChannelBlocked, FewChannelsAreNotBlockedForTraining) {
    std::mt19937 rng(23);
    ComputingGraph g;
    auto* x = g.input("x", {2, 16, 5, 5}, dnn::dtype::Float32, cpu());
    auto* w = g.input("w", {6, 16, 3, 3}, dnn::dtype::Float32, cpu());
    auto* dy = g.input("dy", {2, 6, 5, 5}, dnn::dtype::Float32, cpu());
    auto* r = g.insert1(elemwise(Mode::RELU), {g.insert1(conv(), {x, w})});
    auto* ds = g.insert1(elemwise(Mode::SWITCH_GT0), {r, dy});
    auto* dx = g.insert1(conv_backward<ops::ConvolutionBackwardData>(), {w, ds});
    auto* dw = g.insert1(conv_backward<ops::ConvolutionBackwardFilter>(), {x, ds});
    std::vector<VarNode*> outs{r, dx, dw};
    std::map<const VarNode*, std::vector<float>> in;
    for (VarNode* v : {x, w, dy})
        in[v] = random_floats(v->shape().total_nr_elems(), rng);
    auto want = reference_eval(g, outs, in);
    EXPECT_EQ(propagate_channel_blocked(g, outs, 16), 2u);  // the convolution and the relu
    const std::string d = g.dump(outs);
    EXPECT_EQ(count(d, "ChannelBlock("), 0u) << d;
    EXPECT_EQ(count(d, "ChannelUnblock("), 1u) << d;  // r, for the mask and the caller
    EXPECT_EQ(count(d, "= ConvolutionBackwardData("), 1u) << d;
    EXPECT_EQ(count(d, "= ConvolutionBackwardFilter("), 1u) << d;
    expect_compiled_near(g, outs, in, want, 2e-4f);
}
