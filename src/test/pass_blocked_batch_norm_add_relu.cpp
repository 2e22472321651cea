// fuse_blocked_batch_norm_add_relu after the layout pass, on a residual block's training step:
// stem conv -> BatchNorm -> relu (x0), then conv -> BatchNorm -> relu -> conv -> BatchNorm -> add
// x0 -> relu (y); its backward from a sum of two gradients (dy + r1, blocked as the next block's
// residual sum is), through y's mask, both branches, and the gradients' sum at x0 through x0's
// mask. Before and after the pass, with the relu fusions after it; the rewritten graph compiled
// on the backend gives the unoptimised graph's results (naive kernels, the ops apart).
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/norm.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

using BnMode = dnn::param::BatchNorm::FwdMode;

template <class Op>
Op conv_op() {
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

struct ResidualStep {
    ComputingGraph g;
    std::vector<VarNode*> outs;
    std::map<const VarNode*, std::vector<float>> in;
    VarNode *b2 = nullptr, *sum = nullptr, *ds = nullptr, *dsum = nullptr;

    ResidualStep(size_t c, BnMode mode, std::mt19937& rng) {
        const dnn::TensorShape img{2, 3, 5, 6}, act{2, c, 5, 6}, pc{1, c, 1, 1};
        auto* x = g.input("x", img, dnn::dtype::Float32, cpu());
        auto* dy = g.input("dy", act, dnn::dtype::Float32, cpu());
        auto* w0 = g.input("w0", {c, 3, 3, 3}, dnn::dtype::Float32, cpu());
        auto* w1 = g.input("w1", {c, c, 3, 3}, dnn::dtype::Float32, cpu());
        auto* w2 = g.input("w2", {c, c, 3, 3}, dnn::dtype::Float32, cpu());
        for (VarNode* v : {x, dy, w0, w1, w2})
            in[v] = random_floats(v->shape().total_nr_elems(), rng);
        dnn::param::BatchNorm bp;
        bp.fwd_mode = mode;
        // BatchNorm of `src` with parameters and statistics of its own.
        auto batch_norm = [&](VarNode* src, const std::string& name) {
            std::vector<VarNode*> inputs{src};
            for (const char* what : {"scale", "bias", "rm", "rv"}) {
                auto* v = g.input(name + what, pc, dnn::dtype::Float32, cpu());
                in[v] = std::string(what) == "rv" ? random_floats(c, rng, 0.5f, 2.f)
                                                  : random_floats(c, rng);
                inputs.push_back(v);
            }
            return g.insert(ops::BatchNormForward(bp), inputs);
        };
        auto relu = [&](VarNode* v) { return g.insert1(elemwise(Mode::RELU), {v}); };
        auto mask = [&](VarNode* r, VarNode* d) {
            return g.insert1(elemwise(Mode::SWITCH_GT0), {r, d});
        };
        auto bn_backward = [&](VarNode* diff, VarNode* src, const std::vector<VarNode*>& fwd,
                               const std::vector<VarNode*>& fwd_in) {
            return g.insert(ops::BatchNormBackward(bp), {diff, src, fwd_in[1], fwd[1], fwd[2]});
        };
        // Forward.
        auto* c0 = g.insert1(conv_op<ops::ConvolutionForward>(), {x, w0});
        const auto bn0 = batch_norm(c0, "bn0");
        auto* x0 = relu(bn0[0]);
        auto* c1 = g.insert1(conv_op<ops::ConvolutionForward>(), {x0, w1});
        const auto bn1 = batch_norm(c1, "bn1");
        auto* r1 = relu(bn1[0]);
        auto* c2 = g.insert1(conv_op<ops::ConvolutionForward>(), {r1, w2});
        const auto bn2 = batch_norm(c2, "bn2");
        b2 = bn2[0];
        sum = g.insert1(elemwise(Mode::ADD), {b2, x0});
        auto* y = relu(sum);
        y->set_name("y");
        // Backward (the masks read the relus' outputs: mask_relu_grads's form).
        // A blocked operand makes the sum a member of the blocked chain.
        dsum = g.insert1(elemwise(Mode::ADD), {dy, r1});
        ds = mask(y, dsum);
        auto in_of = [](const std::vector<VarNode*>& bn) { return bn[0]->owner()->inputs(); };
        const auto bwd2 = bn_backward(ds, c2, bn2, in_of(bn2));
        auto* dw2 = g.insert1(conv_op<ops::ConvolutionBackwardFilter>(), {r1, bwd2[0]});
        auto* dr1 = g.insert1(conv_op<ops::ConvolutionBackwardData>(), {w2, bwd2[0]});
        const auto bwd1 = bn_backward(mask(r1, dr1), c1, bn1, in_of(bn1));
        auto* dw1 = g.insert1(conv_op<ops::ConvolutionBackwardFilter>(), {x0, bwd1[0]});
        auto* dx0 = g.insert1(conv_op<ops::ConvolutionBackwardData>(), {w1, bwd1[0]});
        auto* dx0_sum = g.insert1(elemwise(Mode::ADD), {dx0, ds});
        const auto bwd0 = bn_backward(mask(x0, dx0_sum), c0, bn0, in_of(bn0));
        auto* dw0 = g.insert1(conv_op<ops::ConvolutionBackwardFilter>(), {x, bwd0[0]});
        outs = {y, dw0, dw1, dw2};
        for (const auto* bwd : {&bwd0, &bwd1, &bwd2})
            outs.insert(outs.end(), {(*bwd)[1], (*bwd)[2]});
        for (const auto* bn : {&bn0, &bn1, &bn2})
            outs.insert(outs.end(), {(*bn)[3], (*bn)[4]});
    }
};

}  // namespace

TEST(PassBlockedBatchNormAddRelu, ResidualAddAndReluFuseIntoTheBlockedBatchNorms) {
    std::mt19937 rng(41);
    for (size_t block : {8, 16})
        for (size_t c : {16, 20})
            for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE}) {
                SCOPED_TRACE(testing::Message() << "block " << block << ", C " << c << ", mode "
                                                << static_cast<int>(mode));
                ResidualStep st(c, mode, rng);
                const auto want = reference_eval(st.g, st.outs, st.in);
                propagate_channel_blocked(st.g, st.outs, block);
                const std::string before = st.g.dump(st.outs);
                EXPECT_EQ(count(before, "= BatchNormForwardBlocked("), 3u) << before;
                EXPECT_EQ(count(before, "= BatchNormBackwardBlocked("), 3u) << before;
                // The residual add, the gradients' sums at y and at x0.
                EXPECT_EQ(count(before, "Elemwise(mode=ADD)"), 3u) << before;
                EXPECT_EQ(count(before, "Elemwise(mode=RELU)"), 3u) << before;
                EXPECT_EQ(count(before, "Elemwise(mode=SWITCH_GT0)"), 3u) << before;

                // bn2 + add + relu; bn2's backward of y's mask of dy + r1 (whose masked sum
                // the residual branch reads too); bn0's of x0's mask of the sum at x0.
                EXPECT_EQ(fuse_blocked_batch_norm_add_relu(st.g, st.outs), 3u);
                std::string after = st.g.dump(st.outs);
                EXPECT_EQ(count(after, "= BatchNormAddReluForwardBlocked("), 1u) << after;
                EXPECT_EQ(count(after, "= BatchNormAddReluBackwardBlocked("), 2u) << after;
                EXPECT_EQ(count(after, "= BatchNormForwardBlocked("), 2u) << after;
                EXPECT_EQ(count(after, "= BatchNormBackwardBlocked("), 1u) << after;
                // Left: bn0's and bn1's relus, bn1's mask.
                EXPECT_EQ(count(after, "Elemwise(mode=ADD)"), 0u) << after;
                EXPECT_EQ(count(after, "Elemwise(mode=RELU)"), 2u) << after;
                EXPECT_EQ(count(after, "Elemwise(mode=SWITCH_GT0)"), 1u) << after;
                // The conversions stay where they were: in the image and dy; out y.
                EXPECT_EQ(count(after, "ChannelBlock("), 2u) << after;
                EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
                expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);

                // The relu fusions take what is left: bn0's and bn1's relus, bn1's mask.
                EXPECT_EQ(fuse_blocked_batch_norm_relu(st.g, st.outs), 3u);
                after = st.g.dump(st.outs);
                EXPECT_EQ(count(after, "Elemwise("), 0u) << after;
                expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);
            }
}

// A BatchNorm output, a residual sum or a gradients' sum that something else reads too (here the
// caller) stays unfused: the fused op would not give the value that reader needs. The masked sum
// the caller reads is the fused op's own output.
TEST(PassBlockedBatchNormAddRelu, OtherReadersKeepTheirValues) {
    std::mt19937 rng(43);
    for (int reader = 0; reader < 3; ++reader) {
        SCOPED_TRACE(testing::Message() << "reader " << reader);
        ResidualStep st(20, BnMode::TRAINING, rng);
        st.outs.push_back(reader == 0 ? st.b2 : reader == 1 ? st.sum : st.dsum);
        st.outs.push_back(st.ds);
        const auto want = reference_eval(st.g, st.outs, st.in);
        propagate_channel_blocked(st.g, st.outs, 16);
        // The forward fusion needs b2 and the sum; the backward of bn2 dsum.
        EXPECT_EQ(fuse_blocked_batch_norm_add_relu(st.g, st.outs), 2u);
        const std::string d = st.g.dump(st.outs);
        EXPECT_EQ(count(d, "= BatchNormAddReluForwardBlocked("), reader < 2 ? 0u : 1u) << d;
        EXPECT_EQ(count(d, "= BatchNormAddReluBackwardBlocked("), reader < 2 ? 2u : 1u) << d;
        expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);
    }
}

// compile() on the backend's own block: the blocked step with every fusion gives the unoptimised
// graph's results.
TEST(PassBlockedBatchNormAddRelu, CompiledStepMatchesTheUnoptimisedGraph) {
    std::mt19937 rng(47);
    ResidualStep st(24, BnMode::TRAINING, rng);
    const auto want = reference_eval(st.g, st.outs, st.in);
    auto exe = st.g.compile(st.outs);
    const std::string d = exe->dump();
    if (cpu().dnn_handle()->preferred_channel_block() != 0) {
        EXPECT_EQ(count(d, "= BatchNormAddReluForwardBlocked("), 1u) << d;
        EXPECT_EQ(count(d, "= BatchNormAddReluBackwardBlocked("), 2u) << d;
        EXPECT_EQ(count(d, "= BatchNormReluForwardBlocked("), 2u) << d;
        EXPECT_EQ(count(d, "= BatchNormReluBackwardBlocked("), 1u) << d;
    }
    for (auto& [v, values] : st.in)
        exe->set_input(v->name(), tensor(values, v->shape()));
    exe->execute();
    for (size_t i = 0; i < st.outs.size(); ++i) {
        SCOPED_TRACE(testing::Message() << "output " << i);
        expect_near(floats(exe->output(i)), want[i], 2e-4f);
    }
}
