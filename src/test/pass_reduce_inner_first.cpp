// Bias-gradient sums over the trailing axes first: the graph before and after, and the rewritten
// graph's results against the naive reference and a sum by hand.
#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/graph/passes.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

using RMode = dnn::param::Reduce::Mode;

std::vector<float> run_one(ComputingGraph& g, VarNode* out, const std::string& input,
                           const std::vector<float>& values, const dnn::TensorShape& shape,
                           const CompileOptions& options = {}) {
    auto exe = g.compile({out}, options);
    exe->set_input(input, tensor(values, shape));
    exe->execute();
    return floats(exe->output(0));
}

}  // namespace

TEST(PassReduceInnerFirst, ABiasGradientSumsEachRowFirst) {
    ComputingGraph g;
    const dnn::TensorShape shape{5, 3, 6, 7};
    auto* x = g.input("x", shape, dnn::dtype::Float32, cpu());
    // As the broadcast add's backward sums an NCHW gradient to the (1, C, 1, 1) bias.
    auto* a = g.insert1(reduce(RMode::SUM, 0), {x});
    auto* b = g.insert1(reduce(RMode::SUM, 2), {a});
    auto* c = g.insert1(reduce(RMode::SUM, -1), {b});
    std::vector<VarNode*> outs{c};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {5,3,6,7} float32 @cpu0\n"
              "%1 = Reduce(mode=SUM, axis=0)(%0) : {1,3,6,7} float32\n"
              "%2 = Reduce(mode=SUM, axis=2)(%1) : {1,3,1,7} float32\n"
              "%3 = Reduce(mode=SUM, axis=-1)(%2) : {1,3,1,1} float32\n"
              "outputs: %3\n");
    CompileOptions plain;
    plain.reduce_inner_first = false;
    std::mt19937 rng(3);
    auto xv = random_floats(shape.total_nr_elems(), rng);
    auto before = run_one(g, c, "x", xv, shape, plain);

    EXPECT_EQ(reduce_inner_axes_first(g, outs), 1u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {5,3,6,7} float32 @cpu0\n"
              "%4 = Reshape(shape=[5,3,42])(%0) : {5,3,42} float32\n"
              "%5 = Reduce(mode=SUM, axis=2)(%4) : {5,3,1} float32\n"
              "%6 = Reduce(mode=SUM, axis=0)(%5) : {1,3,1} float32\n"
              "%7 = Reshape(shape=[1,3,1,1])(%6) : {1,3,1,1} float32\n"
              "outputs: %7\n");
    EXPECT_EQ(reduce_inner_axes_first(g, outs), 0u);  // already in that form

    auto after = run_one(g, outs[0], "x", xv, shape, plain);
    auto ref = reference_eval(g, outs, {{x, xv}});
    expect_near(after, ref[0]);
    expect_near(after, before);
    for (size_t ch = 0; ch < 3; ++ch) {  // by hand, in double
        double sum = 0;
        for (size_t n = 0; n < 5; ++n)
            for (size_t i = 0; i < 42; ++i)
                sum += xv[(n * 3 + ch) * 42 + i];
        EXPECT_NEAR(after[ch], sum, 1e-4 * (1 + std::fabs(sum)));
    }
}

// Size-1 axes join the trailing run; a chain summing the run in pieces merges them.
TEST(PassReduceInnerFirst, UnitAxesAndRunsSummedInPieces) {
    ComputingGraph g;
    const dnn::TensorShape shape{4, 2, 1, 9, 3};
    auto* x = g.input("x", shape, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(reduce(RMode::SUM, 4), {x});
    auto* b = g.insert1(reduce(RMode::SUM, 3), {a});
    std::vector<VarNode*> outs{b};
    EXPECT_EQ(reduce_inner_axes_first(g, outs), 1u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {4,2,1,9,3} float32 @cpu0\n"
              "%3 = Reshape(shape=[4,2,27])(%0) : {4,2,27} float32\n"
              "%4 = Reduce(mode=SUM, axis=2)(%3) : {4,2,1} float32\n"
              "%5 = Reshape(shape=[4,2,1,1,1])(%4) : {4,2,1,1,1} float32\n"
              "outputs: %5\n");
    std::mt19937 rng(4);
    auto xv = random_floats(shape.total_nr_elems(), rng);
    expect_near(run_one(g, outs[0], "x", xv, shape), reference_eval(g, outs, {{x, xv}})[0]);
}

TEST(PassReduceInnerFirst, LeavesOtherReductionsAlone) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 5, 6}, dnn::dtype::Float32, cpu());
    auto* i = g.input("i", {4, 5, 6}, dnn::dtype::Int32, cpu());
    auto* h = g.input("h", {4, 5, 6}, dnn::dtype::Float16, cpu());
    // One sum of the last axis: already row by row.
    auto* last = g.insert1(reduce(RMode::SUM, 2), {x});
    // Leading axes only: no trailing run to sum first.
    auto* lead = g.insert1(reduce(RMode::SUM, 1), {g.insert1(reduce(RMode::SUM, 0), {x})});
    // Another mode.
    auto* mx = g.insert1(reduce(RMode::MAX, 2), {g.insert1(reduce(RMode::MAX, 0), {x})});
    // Integers.
    auto* ints = g.insert1(reduce(RMode::SUM, 2), {g.insert1(reduce(RMode::SUM, 0), {i})});
    // float16: the reordered sum's intermediates would round differently by far more.
    auto* half = g.insert1(reduce(RMode::SUM, 2), {g.insert1(reduce(RMode::SUM, 0), {h})});
    // An intermediate read elsewhere (an output): the chain stops there, at one leading sum.
    auto* shared = g.insert1(reduce(RMode::SUM, 0), {x});
    auto* tail = g.insert1(reduce(RMode::SUM, 2), {shared});
    std::vector<VarNode*> outs{last, lead, mx, ints, half, shared, tail};
    const std::string before = g.dump(outs);
    EXPECT_EQ(reduce_inner_axes_first(g, outs), 0u);
    EXPECT_EQ(g.dump(outs), before);
}
