// ReLU's backward masked by the ReLU's output: the graph before and after, results equal to the
// unrewritten graph's (zeros, negative zeros and NaNs included), and what it enables: the
// convolution's activation fused into ConvBias and a smaller arena.
#include <cmath>
#include <cstring>
#include <limits>

#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

// The blocked-layout pass is off in both: it adds its conversions' steps on x86, and its own
// tests (pass_channel_blocked.cpp) count those.
CompileOptions with_mask() {
    CompileOptions o;
    o.propagate_layouts = false;
    return o;
}

CompileOptions without_mask() {
    CompileOptions o = with_mask();
    o.mask_relu_grads = false;
    return o;
}

}  // namespace

TEST(PassReluMask, SwitchReadsTheReluOutputAndResultsStayEqual) {
    ComputingGraph g;
    auto* x = g.input("x", {8}, dnn::dtype::Float32, cpu());
    auto* dy = g.input("dy", {8}, dnn::dtype::Float32, cpu());
    auto* r = g.insert1(elemwise(Mode::RELU), {x});
    auto* dx = g.insert1(elemwise(Mode::SWITCH_GT0), {x, dy});
    auto* other = g.insert1(elemwise(Mode::SWITCH_GT0), {dy, x});  // no RELU of dy: unchanged
    std::vector<VarNode*> outs{r, dx, other};
    auto plain = g.compile(outs, without_mask());
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {8} float32 @cpu0\n"
              "%1 'dy' = input : {8} float32 @cpu0\n"
              "%2 = Elemwise(mode=RELU)(%0) : {8} float32\n"
              "%3 = Elemwise(mode=SWITCH_GT0)(%0, %1) : {8} float32\n"
              "%4 = Elemwise(mode=SWITCH_GT0)(%1, %0) : {8} float32\n"
              "outputs: %2 %3 %4\n");
    EXPECT_EQ(mask_relu_grads_by_output(g, outs), 1u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {8} float32 @cpu0\n"
              "%1 'dy' = input : {8} float32 @cpu0\n"
              "%2 = Elemwise(mode=RELU)(%0) : {8} float32\n"
              // The rewrite runs where the node it replaced ran (%3's place), before %4.
              "%5 = Elemwise(mode=SWITCH_GT0)(%2, %1) : {8} float32\n"
              "%4 = Elemwise(mode=SWITCH_GT0)(%1, %0) : {8} float32\n"
              "outputs: %2 %5 %4\n");
    auto masked = g.compile(outs);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> xv{-2, -0.f, 0, 1e-30f, 3, nan, -nan, 0.5f}, dyv{1, 2, 3, 4, 5, 6, 7, 8};
    for (auto* exe : {plain.get(), masked.get()}) {
        exe->set_input("x", tensor(xv, {8}));
        exe->set_input("dy", tensor(dyv, {8}));
        exe->execute();
    }
    EXPECT_EQ(floats(masked->output(1)), (std::vector<float>{0, 0, 0, 4, 5, 0, 0, 8}));
    EXPECT_EQ(floats(masked->output(1)), floats(plain->output(1)));
    // dy > 0 everywhere: the untouched SWITCH_GT0 passes x on, NaNs included (bit for bit).
    auto got = floats(masked->output(2)), want = floats(plain->output(2));
    EXPECT_EQ(std::memcmp(got.data(), xv.data(), 8 * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 8 * sizeof(float)), 0);
}

TEST(PassReluMask, ConvBiasTakesTheActivationAndTheArenaShrinks) {
    std::mt19937 rng(9);
    ComputingGraph g;
    auto* x = g.input("x", {2, 3, 8, 8}, dnn::dtype::Float32, cpu());
    auto* dy = g.input("dy", {2, 4, 6, 6}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(4 * 3 * 9, rng), {4, 3, 3, 3}), "w");
    auto* b = g.constant(tensor(random_floats(4, rng), {1, 4, 1, 1}), "b");
    auto* pre = g.insert1(elemwise(Mode::ADD), {g.insert1(ops::ConvolutionForward(), {x, w}), b});
    auto* act = g.insert1(elemwise(Mode::RELU), {pre});
    auto* dpre = g.insert1(elemwise(Mode::SWITCH_GT0), {pre, dy});
    auto* loss = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 1), {act});
    std::vector<VarNode*> outs{loss, dpre};
    auto plain = g.compile(outs, without_mask());
    auto masked = g.compile(outs, with_mask());
    bool own = cpu().dnn_handle()->has_own_kernel(dnn::ConvBias::kType);
    // Without the rewrite pre is read twice, so the RELU stays a step of its own.
    EXPECT_EQ(plain->num_steps(), own ? 4u : 5u);
    // With it, ConvBias (where the backend has one) takes the bias and the RELU.
    EXPECT_EQ(masked->num_steps(), own ? 3u : 5u);
    if (own) {
        EXPECT_NE(masked->dump().find("nonlineMode=RELU"), std::string::npos) << masked->dump();
    }
    EXPECT_LE(masked->planned_peak_bytes(), plain->planned_peak_bytes());
    auto xv = random_floats(2 * 3 * 64, rng), dyv = random_floats(2 * 4 * 36, rng);
    for (auto* exe : {plain.get(), masked.get()}) {
        exe->set_input("x", tensor(xv, {2, 3, 8, 8}));
        exe->set_input("dy", tensor(dyv, {2, 4, 6, 6}));
        exe->execute();
    }
    auto want = reference_eval(g, outs, {{x, xv}, {dy, dyv}});
    for (size_t i = 0; i < outs.size(); ++i) {
        expect_near(floats(masked->output(i)), want[i]);
        expect_near(floats(masked->output(i)), floats(plain->output(i)));
    }
}
