// Layout propagation through a training step (propagate_channel_blocked): a residual block's
// forward (conv -> BatchNorm -> relu -> conv -> add -> relu) and its backward (the relu masks,
// BatchNorm's backward, both backward convolutions), before and after the pass: every op of
// the step runs blocked, with conversions only at its edges (the image and the incoming gradient
// in, the result out), the filter and BatchNorm gradients and statistics plain; and the results
// equal the unoptimised graph's. Blocks of 8 and 16, channel counts that fill their last block and
// that do not, both BatchNorm modes.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/norm.h"

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
    VarNode *bn_dst, *bn_diff;  // BatchNorm's output (the relu's src) and gradient (the mask's)

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
        bn_dst = bn[0];
        bn_diff = dbn;
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
        // The relu after BatchNorm fused into it, and its mask over the gradients' sum (the
        // residual's and the convolution's) into BatchNorm's backward with the sum.
        EXPECT_EQ(count(d, "= BatchNormReluForwardBlocked("), 1u) << d;
        EXPECT_EQ(count(d, "= BatchNormAddReluBackwardBlocked("), 1u) << d;
    }
    for (auto& [v, values] : st.in)
        exe->set_input(v->name(), tensor(values, v->shape()));
    exe->execute();
    for (size_t i = 0; i < st.outs.size(); ++i)
        expect_near(floats(exe->output(i)), want[i], 2e-4f);
}

// A tensor of fewer channels than a block is not converted into the blocked layout: LeNet's
// 6-channel backward stays plain (its forward chain is blocked as before), and the results agree.
// The rule and LeNet's traced step under it: docs/x86-backend-log.md, "Blocked training steps in
// traced graphs".
TEST(PassChannelBlocked, FewChannelsAreNotBlockedForTraining) {
    std::mt19937 rng(23);
    for (size_t block : {8, 16}) {
        SCOPED_TRACE(testing::Message() << "block " << block);
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
        EXPECT_EQ(propagate_channel_blocked(g, outs, block), 2u);  // the convolution and the relu
        const std::string d = g.dump(outs);
        EXPECT_EQ(count(d, "ChannelBlock("), 0u) << d;
        EXPECT_EQ(count(d, "ChannelUnblock("), 1u) << d;  // r, for the mask and the caller
        EXPECT_EQ(count(d, "= ConvolutionBackwardData("), 1u) << d;
        EXPECT_EQ(count(d, "= ConvolutionBackwardFilter("), 1u) << d;
        expect_compiled_near(g, outs, in, want, 2e-4f);
    }
}

// A depthwise convolution from a plain src of fewer channels than a block to fewer than a block
// (LeNet's 1 -> 6 first layer: one input channel, one group) stays plain, forward and backward; the
// next one (6 -> 16) runs blocked from its plain src. Before the pass both convolutions are plain;
// after it, one is blocked and nothing converts the narrow layer's output; the relu's mask of the
// plain incoming gradient, which only the plain backward convolutions read, stays plain too and
// reads the relu's plain value (unblocked for the caller anyway) instead of converting the
// gradient in and its own result out. The results agree with the unoptimised graph's.
TEST(PassChannelBlocked, NarrowConvolutionStaysPlain) {
    std::mt19937 rng(29);
    for (size_t block : {8, 16}) {
        SCOPED_TRACE(testing::Message() << "block " << block);
        ComputingGraph g;
        auto* x = g.input("x", {2, 1, 7, 6}, dnn::dtype::Float32, cpu());
        auto* w1 = g.input("w1", {6, 1, 3, 3}, dnn::dtype::Float32, cpu());
        auto* w2 = g.input("w2", {16, 6, 3, 3}, dnn::dtype::Float32, cpu());
        auto* dy = g.input("dy", {2, 16, 7, 6}, dnn::dtype::Float32, cpu());
        auto* r1 = g.insert1(elemwise(Mode::RELU), {g.insert1(conv(), {x, w1})});
        auto* r2 = g.insert1(elemwise(Mode::RELU), {g.insert1(conv(), {r1, w2})});
        auto* ds2 = g.insert1(elemwise(Mode::SWITCH_GT0), {r2, dy});
        auto* dw2 = g.insert1(conv_backward<ops::ConvolutionBackwardFilter>(), {r1, ds2});
        auto* dr1 = g.insert1(conv_backward<ops::ConvolutionBackwardData>(), {w2, ds2});
        auto* ds1 = g.insert1(elemwise(Mode::SWITCH_GT0), {r1, dr1});
        auto* dw1 = g.insert1(conv_backward<ops::ConvolutionBackwardFilter>(), {x, ds1});
        std::vector<VarNode*> outs{r2, dw1, dw2};
        std::map<const VarNode*, std::vector<float>> in;
        for (VarNode* v : {x, w1, w2, dy})
            in[v] = random_floats(v->shape().total_nr_elems(), rng);
        auto want = reference_eval(g, outs, in);
        const std::string before = g.dump(outs);
        EXPECT_EQ(count(before, "= ConvolutionForward("), 2u) << before;
        // The second convolution and its relu.
        EXPECT_EQ(propagate_channel_blocked(g, outs, block), 2u);
        const std::string after = g.dump(outs);
        EXPECT_EQ(count(after, "= ConvolutionForward("), 1u) << after;
        EXPECT_EQ(count(after, "= ConvBiasBlocked("), 1u) << after;
        EXPECT_EQ(count(after, "ChannelBlock("), 0u) << after;
        // The mask of r2's plain value (%17) and the incoming gradient (%3).
        EXPECT_EQ(count(after, "= ChannelUnblock(channels=16)(%16)"), 1u) << after;
        EXPECT_EQ(count(after, "Elemwise(mode=SWITCH_GT0)(%17, %3)"), 1u) << after;
        // r2, for the caller and the mask.
        EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
        EXPECT_EQ(count(after, "ChannelUnblock(channels=6)"), 0u) << after;
        EXPECT_EQ(count(after, "= ConvolutionBackwardFilter("), 2u) << after;
        expect_compiled_near(g, outs, in, want, 2e-4f);
    }
}

// fuse_blocked_batch_norm_relu after the layout pass: the relu that alone reads BatchNorm's dst
// goes into BatchNormReluForwardBlocked, the mask (SWITCH_GT0) that alone feeds BatchNorm's
// backward into BatchNormReluBackwardBlocked; the other relu and mask stay. The results equal the
// unoptimised graph's.
TEST(PassChannelBlocked, ReluFusesIntoTheBlockedBatchNorms) {
    std::mt19937 rng(29);
    for (size_t block : {8, 16})
        for (BnMode mode : {BnMode::TRAINING, BnMode::INFERENCE}) {
            SCOPED_TRACE(testing::Message()
                         << "block " << block << ", mode " << static_cast<int>(mode));
            Step st(20, mode, rng);
            auto want = reference_eval(st.g, st.outs, st.in);
            propagate_channel_blocked(st.g, st.outs, block);
            const std::string before = st.g.dump(st.outs);
            EXPECT_EQ(count(before, "= BatchNormForwardBlocked("), 1u) << before;
            EXPECT_EQ(count(before, "= BatchNormBackwardBlocked("), 1u) << before;
            EXPECT_EQ(count(before, "Elemwise(mode=RELU)"), 2u) << before;
            EXPECT_EQ(count(before, "Elemwise(mode=SWITCH_GT0)"), 2u) << before;

            EXPECT_EQ(fuse_blocked_batch_norm_relu(st.g, st.outs), 2u);
            const std::string after = st.g.dump(st.outs);
            EXPECT_EQ(count(after, "= BatchNormReluForwardBlocked("), 1u) << after;
            EXPECT_EQ(count(after, "= BatchNormReluBackwardBlocked("), 1u) << after;
            EXPECT_EQ(count(after, "= BatchNormForwardBlocked("), 0u) << after;
            EXPECT_EQ(count(after, "= BatchNormBackwardBlocked("), 0u) << after;
            EXPECT_EQ(count(after, "Elemwise(mode=RELU)"), 1u) << after;
            EXPECT_EQ(count(after, "Elemwise(mode=SWITCH_GT0)"), 1u) << after;
            // The conversions stay where they were: nothing plain is read by the fused ops.
            EXPECT_EQ(count(after, "ChannelBlock("), 2u) << after;
            EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;

            expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);
        }
}

// A BatchNorm output or a mask that something else reads too (here the caller) stays unfused:
// the fused op would not give the value that reader needs.
TEST(PassChannelBlocked, ReluDoesNotFuseWhereItsInputHasOtherReaders) {
    std::mt19937 rng(31);
    Step st(20, BnMode::TRAINING, rng);
    st.outs.push_back(st.bn_dst);
    st.outs.push_back(st.bn_diff);
    auto want = reference_eval(st.g, st.outs, st.in);
    propagate_channel_blocked(st.g, st.outs, 16);
    EXPECT_EQ(fuse_blocked_batch_norm_relu(st.g, st.outs), 0u);
    const std::string d = st.g.dump(st.outs);
    EXPECT_EQ(count(d, "= BatchNormForwardBlocked("), 1u) << d;
    EXPECT_EQ(count(d, "= BatchNormBackwardBlocked("), 1u) << d;
    expect_compiled_near(st.g, st.outs, st.in, want, 2e-4f);
}

namespace {

dnn::param::Convolution conv_geometry(uint32_t group, int32_t pad) {
    dnn::param::Convolution p;
    p.padding = {pad, pad};
    p.group = group;
    return p;
}

}  // namespace

// A MobileNet unit's training step: conv -> relu -> depthwise conv (a group per channel) -> relu
// -> pointwise conv, and the backward of all three. The depthwise convolution and its two
// backward ops run blocked like the others (oneDNN's blocked depthwise kernels), so the step
// converts only the image, the incoming gradient and the result; the results equal the
// unoptimised graph's. A grouped convolution of groups that are not whole blocks stays plain.
TEST(PassChannelBlocked, DepthwiseTrainingStepRunsBlocked) {
    std::mt19937 rng(41);
    for (size_t block : {8, 16})
        for (size_t c : {16, 20}) {
            SCOPED_TRACE(testing::Message() << "block " << block << ", C " << c);
            ComputingGraph g;
            const size_t c2 = 24;
            auto* x = g.input("x", {2, 3, 6, 7}, dnn::dtype::Float32, cpu());
            auto* dy = g.input("dy", {2, c2, 6, 7}, dnn::dtype::Float32, cpu());
            auto* w1 = g.input("w1", {c, 3, 3, 3}, dnn::dtype::Float32, cpu());
            auto* wd = g.input("wd", {c, 1, 3, 3}, dnn::dtype::Float32, cpu());
            auto* wp = g.input("wp", {c2, c, 1, 1}, dnn::dtype::Float32, cpu());
            std::map<const VarNode*, std::vector<float>> in;
            for (VarNode* v : {x, dy, w1, wd, wp})
                in[v] = random_floats(v->shape().total_nr_elems(), rng);
            const auto dense = conv_geometry(1, 1), depthwise = conv_geometry(c, 1),
                       pointwise = conv_geometry(1, 0);
            auto* r1 = g.insert1(elemwise(Mode::RELU),
                                 {g.insert1(ops::ConvolutionForward(dense), {x, w1})});
            auto* r2 = g.insert1(elemwise(Mode::RELU),
                                 {g.insert1(ops::ConvolutionForward(depthwise), {r1, wd})});
            auto* y = g.insert1(ops::ConvolutionForward(pointwise), {r2, wp});
            y->set_name("y");
            auto* dwp = g.insert1(ops::ConvolutionBackwardFilter(pointwise), {r2, dy});
            auto* dr2 = g.insert1(ops::ConvolutionBackwardData(pointwise), {wp, dy});
            auto* dd = g.insert1(elemwise(Mode::SWITCH_GT0), {r2, dr2});
            auto* dwd = g.insert1(ops::ConvolutionBackwardFilter(depthwise), {r1, dd});
            auto* dr1 = g.insert1(ops::ConvolutionBackwardData(depthwise), {wd, dd});
            auto* dc1 = g.insert1(elemwise(Mode::SWITCH_GT0), {r1, dr1});
            auto* dw1 = g.insert1(ops::ConvolutionBackwardFilter(dense), {x, dc1});
            std::vector<VarNode*> outs{y, dwp, dwd, dw1};
            auto want = reference_eval(g, outs, in);
            const std::string before = g.dump(outs);
            EXPECT_EQ(count(before, "group=" + std::to_string(c)), 3u) << before;
            EXPECT_EQ(count(before, "Blocked("), 0u) << before;

            // 3 convolutions, 2 relus, 2 masks, 2 backward data, 3 backward filter.
            EXPECT_EQ(propagate_channel_blocked(g, outs, block), 12u);
            const std::string after = g.dump(outs);
            EXPECT_EQ(count(after, "= ConvBiasBlocked("), 3u) << after;
            EXPECT_EQ(count(after, "= ConvolutionBackwardDataBlocked("), 2u) << after;
            EXPECT_EQ(count(after, "= ConvolutionBackwardFilterBlocked("), 3u) << after;
            EXPECT_EQ(count(after, "group=" + std::to_string(c)), 3u) << after;
            for (const char* plain : {"= ConvolutionForward(", "= ConvolutionBackwardData(",
                                      "= ConvolutionBackwardFilter("})
                EXPECT_EQ(count(after, plain), 0u) << after;
            EXPECT_EQ(count(after, "ChannelBlock("), 2u) << after;  // dy; x for dw1
            EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
            expect_compiled_near(g, outs, in, want, 2e-4f);
        }

    // Two groups of 12 channels: not whole blocks of 8 or 16, so oneDNN has no blocked kernel.
    ComputingGraph g;
    auto* x = g.input("x", {1, 24, 5, 5}, dnn::dtype::Float32, cpu());
    auto* w = g.input("w", {24, 24, 3, 3}, dnn::dtype::Float32, cpu());
    auto* wg = g.input("wg", {24, 12, 3, 3}, dnn::dtype::Float32, cpu());
    auto* r = g.insert1(elemwise(Mode::RELU),
                        {g.insert1(ops::ConvolutionForward(conv_geometry(1, 1)), {x, w})});
    auto* grouped = g.insert1(ops::ConvolutionForward(conv_geometry(2, 1)), {r, wg});
    std::vector<VarNode*> outs{grouped};
    for (size_t block : {8, 16}) {
        std::vector<VarNode*> o = outs;
        auto copy = g.copy(o);
        EXPECT_EQ(propagate_channel_blocked(*copy, o, block), 2u);  // the first conv and relu
        const std::string d = copy->dump(o);
        EXPECT_EQ(count(d, "= ConvolutionForward("), 1u) << d;
    }
}

// 1-D and 3-D chains (oneDNN's nCw16c / nCdhw16c): conv -> BatchNorm -> relu -> conv + a
// per-channel bias, and BatchNorm's and the convolutions' backward, run blocked like the 2-D
// ones, with the relu fused into the blocked BatchNorm; the results equal the unoptimised graph's.
TEST(PassChannelBlocked, OneAndThreeDimensionalChainsRunBlocked) {
    std::mt19937 rng(43);
    for (size_t spatial : {1, 3})
        for (size_t block : {8, 16}) {
            SCOPED_TRACE(testing::Message() << spatial << "-D, block " << block);
            const size_t c = 20;
            ComputingGraph g;
            dnn::TensorShape img{2, 3}, act{2, c}, pc{1, c}, k1{c, 3}, k2{c, c};
            const size_t sizes[] = {5, 4, 6};
            for (size_t d = 0; d < spatial; ++d) {
                img[2 + d] = act[2 + d] = sizes[3 - spatial + d];
                pc[2 + d] = 1;
                k1[2 + d] = k2[2 + d] = 3;
            }
            img.ndim = act.ndim = pc.ndim = k1.ndim = k2.ndim = 2 + spatial;
            dnn::param::Convolution cp;
            cp.stride = cp.dilation = std::vector<int32_t>(spatial, 1);
            cp.padding = std::vector<int32_t>(spatial, 1);
            auto* x = g.input("x", img, dnn::dtype::Float32, cpu());
            auto* dy = g.input("dy", act, dnn::dtype::Float32, cpu());
            auto* w1 = g.input("w1", k1, dnn::dtype::Float32, cpu());
            auto* w2 = g.input("w2", k2, dnn::dtype::Float32, cpu());
            auto* scale = g.input("scale", pc, dnn::dtype::Float32, cpu());
            auto* bias = g.input("bias", pc, dnn::dtype::Float32, cpu());
            auto* rm = g.input("rm", pc, dnn::dtype::Float32, cpu());
            auto* rv = g.input("rv", pc, dnn::dtype::Float32, cpu());
            auto* shift = g.input("shift", pc, dnn::dtype::Float32, cpu());
            std::map<const VarNode*, std::vector<float>> in;
            for (VarNode* v : {x, dy, w1, w2, scale, bias, rm, shift})
                in[v] = random_floats(v->shape().total_nr_elems(), rng);
            in[rv] = random_floats(c, rng, 0.5f, 2.f);
            const dnn::param::BatchNorm bp;
            auto* c1 = g.insert1(ops::ConvolutionForward(cp), {x, w1});
            const auto bn = g.insert(ops::BatchNormForward(bp), {c1, scale, bias, rm, rv});
            auto* r = g.insert1(elemwise(Mode::RELU), {bn[0]});
            auto* c2 = g.insert1(ops::ConvolutionForward(cp), {r, w2});
            auto* y = g.insert1(elemwise(Mode::ADD), {c2, shift});
            y->set_name("y");
            auto* dw2 = g.insert1(ops::ConvolutionBackwardFilter(cp), {r, dy});
            auto* dr = g.insert1(ops::ConvolutionBackwardData(cp), {w2, dy});
            auto* dbn = g.insert1(elemwise(Mode::SWITCH_GT0), {r, dr});
            const auto bwd = g.insert(ops::BatchNormBackward(bp), {dbn, c1, scale, bn[1], bn[2]});
            auto* dw1 = g.insert1(ops::ConvolutionBackwardFilter(cp), {x, bwd[0]});
            std::vector<VarNode*> outs{y, dw1, dw2, bwd[1], bwd[2], bn[3], bn[4]};
            auto want = reference_eval(g, outs, in);

            // 2 convolutions, BatchNorm, relu, the bias add, 2 filter gradients, the data
            // gradient, the mask, BatchNorm's backward.
            EXPECT_EQ(propagate_channel_blocked(g, outs, block), 10u);
            EXPECT_EQ(fuse_blocked_batch_norm_relu(g, outs), 2u);
            const std::string after = g.dump(outs);
            EXPECT_EQ(count(after, "= ConvBiasBlocked("), 2u) << after;
            EXPECT_EQ(count(after, "= BatchNormReluForwardBlocked("), 1u) << after;
            EXPECT_EQ(count(after, "= BatchNormReluBackwardBlocked("), 1u) << after;
            EXPECT_EQ(count(after, "= ConvolutionBackwardDataBlocked("), 1u) << after;
            EXPECT_EQ(count(after, "= ConvolutionBackwardFilterBlocked("), 2u) << after;
            // In: dy, shift, x (for w1's gradient); out: y.
            EXPECT_EQ(count(after, "ChannelBlock("), 3u) << after;
            EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
            expect_compiled_near(g, outs, in, want, 2e-4f);
        }
}

// BatchNorm1d's form: a 1-D convolution's (N, C, L) reshaped to (N, C, L, 1) for BatchNorm and
// back, and the same in its backward. The Reshapes only move a dim of size 1, so they reshape the
// blocked tensors instead (the same memory) and the chain stays blocked; the relu and its mask
// fuse into the BatchNorms through them.
TEST(PassChannelBlocked, UnitReshapesStayInTheChain) {
    std::mt19937 rng(47);
    ComputingGraph g;
    const size_t c = 20;
    dnn::param::Convolution cp;
    cp.stride = cp.dilation = cp.padding = {1};
    auto* x = g.input("x", {2, 3, 9}, dnn::dtype::Float32, cpu());
    auto* w1 = g.input("w1", {c, 3, 3}, dnn::dtype::Float32, cpu());
    auto* w2 = g.input("w2", {c, c, 3}, dnn::dtype::Float32, cpu());
    std::vector<VarNode*> pcs;
    std::map<const VarNode*, std::vector<float>> in;
    for (const char* name : {"scale", "bias", "rm", "rv"}) {
        pcs.push_back(g.input(name, {1, c, 1, 1}, dnn::dtype::Float32, cpu()));
        in[pcs.back()] = random_floats(c, rng, 0.5f, 2.f);
    }
    for (VarNode* v : {x, w1, w2})
        in[v] = random_floats(v->shape().total_nr_elems(), rng);
    auto* c1 = g.insert1(ops::ConvolutionForward(cp), {x, w1});
    auto* c1_4d = g.insert1(reshape({2, int32_t(c), 9, 1}), {c1});
    const dnn::param::BatchNorm bp;
    const auto bn = g.insert(ops::BatchNormForward(bp), {c1_4d, pcs[0], pcs[1], pcs[2], pcs[3]});
    auto* bn_1d = g.insert1(reshape({2, int32_t(c), 9}), {bn[0]});
    auto* r = g.insert1(elemwise(Mode::RELU), {bn_1d});
    auto* y = g.insert1(ops::ConvolutionForward(cp), {r, w2});
    auto* dy = g.input("dy", {2, c, 9}, dnn::dtype::Float32, cpu());
    in[dy] = random_floats(2 * c * 9, rng);
    auto* dr = g.insert1(ops::ConvolutionBackwardData(cp), {w2, dy});
    auto* masked = g.insert1(elemwise(Mode::SWITCH_GT0), {r, dr});
    auto* dbn = g.insert1(reshape({2, int32_t(c), 9, 1}), {masked});
    const auto bwd = g.insert(ops::BatchNormBackward(bp), {dbn, c1_4d, pcs[0], bn[1], bn[2]});
    auto* dc1 = g.insert1(reshape({2, int32_t(c), 9}), {bwd[0]});
    std::vector<VarNode*> outs{y, bn[3], dc1, bwd[1]};
    auto want = reference_eval(g, outs, in);
    EXPECT_EQ(count(g.dump(outs), "= Reshape("), 4u);

    // 2 convolutions, 4 reshapes, BatchNorm, the relu, the data gradient, the mask, BatchNorm's
    // backward.
    EXPECT_EQ(propagate_channel_blocked(g, outs, 16), 11u);
    const std::string before = g.dump(outs);
    EXPECT_EQ(count(before, "= Reshape(shape=[2,2,9,1,16])"), 2u) << before;
    EXPECT_EQ(count(before, "= Reshape(shape=[2,2,9,16])"), 2u) << before;
    EXPECT_EQ(count(before, "= BatchNormForwardBlocked("), 1u) << before;
    EXPECT_EQ(count(before, "ChannelBlock("), 1u) << before;    // dy
    EXPECT_EQ(count(before, "ChannelUnblock("), 2u) << before;  // y, dc1

    EXPECT_EQ(fuse_blocked_batch_norm_relu(g, outs), 2u);
    const std::string after = g.dump(outs);
    EXPECT_EQ(count(after, "= BatchNormReluForwardBlocked("), 1u) << after;
    EXPECT_EQ(count(after, "= BatchNormReluBackwardBlocked("), 1u) << after;
    EXPECT_EQ(count(after, "Elemwise("), 0u) << after;
    // Forward: the relu's value back to 3-D; backward: dr and the mask to 4-D, the gradient back.
    EXPECT_EQ(count(after, "= Reshape(shape=[2,2,9,16])"), 2u) << after;
    EXPECT_EQ(count(after, "= Reshape(shape=[2,2,9,1,16])"), 3u) << after;
    expect_compiled_near(g, outs, in, want, 2e-4f);
}
