// Common-subexpression elimination: the graph before and after, and equal results.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/tensor_basic.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

TEST(PassCse, MergesSameOpSameParamsSameInputs) {
    ComputingGraph g;
    auto* x = g.input("x", {2}, dnn::dtype::Float32, cpu());
    auto* w = g.input("w", {2}, dnn::dtype::Float32, cpu());
    auto* a1 = g.insert1(elemwise(Mode::MUL), {x, w});
    auto* a2 = g.insert1(elemwise(Mode::MUL), {x, w});   // same as a1
    auto* sw = g.insert1(elemwise(Mode::MUL), {w, x});   // other input order: kept
    auto* sub = g.insert1(elemwise(Mode::SUB), {x, w});  // other params: kept
    auto* b1 = g.insert1(elemwise(Mode::RELU), {a1});
    auto* b2 = g.insert1(elemwise(Mode::RELU), {a2});  // same once a2 is a1
    auto* y = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {b1, b2, sw});
    std::vector<VarNode*> outs{y, b2, sub};
    const std::string before =
            "%0 'x' = input : {2} float32 @cpu0\n"
            "%1 'w' = input : {2} float32 @cpu0\n"
            "%2 = Elemwise(mode=MUL)(%0, %1) : {2} float32\n"
            "%3 = Elemwise(mode=MUL)(%0, %1) : {2} float32\n"
            "%4 = Elemwise(mode=MUL)(%1, %0) : {2} float32\n"
            "%5 = Elemwise(mode=SUB)(%0, %1) : {2} float32\n"
            "%6 = Elemwise(mode=RELU)(%2) : {2} float32\n"
            "%7 = Elemwise(mode=RELU)(%3) : {2} float32\n"
            "%8 = Elemwise(mode=FUSE_MUL_ADD3)(%6, %7, %4) : {2} float32\n"
            "outputs: %8 %7 %5\n";
    EXPECT_EQ(g.dump(outs), before);

    CompileOptions no_cse;
    no_cse.eliminate_common_subexpr = false;
    no_cse.fuse_elemwise = false;  // one step per op
    auto plain = g.compile(outs, no_cse);
    EXPECT_EQ(plain->num_steps(), 7u);
    EXPECT_EQ(eliminate_common_subexpressions(g, outs), 2u);
    EXPECT_EQ(outs[1], b1);  // the output list follows the merge
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2} float32 @cpu0\n"
              "%1 'w' = input : {2} float32 @cpu0\n"
              "%2 = Elemwise(mode=MUL)(%0, %1) : {2} float32\n"
              "%4 = Elemwise(mode=MUL)(%1, %0) : {2} float32\n"
              "%5 = Elemwise(mode=SUB)(%0, %1) : {2} float32\n"
              "%6 = Elemwise(mode=RELU)(%2) : {2} float32\n"
              "%8 = Elemwise(mode=FUSE_MUL_ADD3)(%6, %6, %4) : {2} float32\n"
              "outputs: %8 %6 %5\n");
    auto merged = g.compile(outs, no_cse);
    EXPECT_EQ(merged->num_steps(), 5u);
    for (auto* exe : {plain.get(), merged.get()}) {
        exe->set_input("x", tensor({-1, 2}, {2}));
        exe->set_input("w", tensor({3, 4}, {2}));
        exe->execute();
    }
    for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_EQ(floats(merged->output(i)), floats(plain->output(i)));
    EXPECT_EQ(floats(merged->output(0)), (std::vector<float>{-3, 72}));  // 0*0 + -3, 8*8 + 8
}

TEST(PassCse, GeneratorsMergeOnlyWithEqualOutputShapes) {
    ComputingGraph g;
    InsertOptions small, small_again, big;
    small.comp_node = small_again.comp_node = big.comp_node = cpu();
    small.output_shapes = small_again.output_shapes = {{2}};
    big.output_shapes = {{3}};
    auto* f1 = g.insert1(ops::Fill(), {}, small);
    auto* f2 = g.insert1(ops::Fill(), {}, small_again);
    auto* f3 = g.insert1(ops::Fill(), {}, big);
    std::vector<VarNode*> outs{f1, f2, f3};
    EXPECT_EQ(eliminate_common_subexpressions(g, outs), 1u);
    EXPECT_EQ(g.dump(outs),
              "%0 = Fill(value=0, dtype=float32)() : {2} float32\n"
              "%2 = Fill(value=0, dtype=float32)() : {3} float32\n"
              "outputs: %0 %0 %2\n");
}
