// Constant folding: the graph before and after, and equal results.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/tensor_basic.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

TEST(PassConstFold, RunsConstantSubgraphsOnceAtCompileTime) {
    ComputingGraph g;
    auto* x = g.input("x", {3}, dnn::dtype::Float32, cpu());
    auto* c1 = g.constant(tensor({1, 2, 3}, {3}), "c1");
    auto* c2 = g.constant(tensor({10, 20, 30}, {3}), "c2");
    auto* s = g.insert1(elemwise(Mode::ADD), {c1, c2});
    auto* t = g.insert1(elemwise(Mode::MUL), {s, s});
    auto* m = g.insert1(reshape({1, 3}), {t});  // a view op folds too
    InsertOptions opt;
    opt.comp_node = cpu();
    opt.output_shapes = {{1, 3}};
    dnn::param::Fill fp;
    fp.value = 2;
    auto* two = g.insert1(ops::Fill(fp), {}, opt);  // no inputs: folds
    auto* scaled = g.insert1(elemwise(Mode::MUL), {m, two});
    auto* y = g.insert1(elemwise(Mode::ADD), {x, scaled});
    std::vector<VarNode*> outs{y};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {3} float32 @cpu0\n"
              "%1 'c1' = const [1, 2, 3] : {3} float32 @cpu0\n"
              "%2 'c2' = const [10, 20, 30] : {3} float32 @cpu0\n"
              "%3 = Elemwise(mode=ADD)(%1, %2) : {3} float32\n"
              "%4 = Elemwise(mode=MUL)(%3, %3) : {3} float32\n"
              "%5 = Reshape(shape=[1,3])(%4) : {1,3} float32\n"
              "%6 = Fill(value=2, dtype=float32)() : {1,3} float32\n"
              "%7 = Elemwise(mode=MUL)(%5, %6) : {1,3} float32\n"
              "%8 = Elemwise(mode=ADD)(%0, %7) : {1,3} float32\n"
              "outputs: %8\n");
    CompileOptions no_fold;
    no_fold.fold_constants = false;
    no_fold.fuse_elemwise = false;  // one step per op
    auto plain = g.compile(outs, no_fold);

    EXPECT_EQ(fold_constants(g, outs), 5u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {3} float32 @cpu0\n"
              "%13 = const [242, 968, 2178] : {1,3} float32 @cpu0\n"
              "%8 = Elemwise(mode=ADD)(%0, %13) : {1,3} float32\n"
              "outputs: %8\n");
    // The folded values live in constants nobody reads any more; dead-code removal takes them.
    EXPECT_EQ(eliminate_dead_code(g, outs), 6u);
    EXPECT_EQ(g.dump(),
              "%0 'x' = input : {3} float32 @cpu0\n"
              "%13 = const [242, 968, 2178] : {1,3} float32 @cpu0\n"
              "%8 = Elemwise(mode=ADD)(%0, %13) : {1,3} float32\n");

    auto folded = g.compile(outs);
    EXPECT_EQ(plain->num_steps(), 5u);  // the Reshape is its input's memory: no step
    EXPECT_EQ(folded->num_steps(), 1u);
    for (auto* exe : {plain.get(), folded.get()}) {
        exe->set_input("x", tensor({1, 1, 1}, {3}));
        exe->execute();
    }
    EXPECT_EQ(floats(folded->output(0)), (std::vector<float>{243, 969, 2179}));
    EXPECT_EQ(floats(plain->output(0)), floats(folded->output(0)));
}

TEST(PassConstFold, LeavesNodesThatReadAnInputAlone) {
    ComputingGraph g;
    auto* x = g.input("x", {2}, dnn::dtype::Float32, cpu());
    auto* c = g.constant(tensor({1, 2}, {2}), "c");
    auto* y = g.insert1(elemwise(Mode::ADD), {x, c});
    std::vector<VarNode*> outs{y};
    std::string before = g.dump(outs);
    EXPECT_EQ(fold_constants(g, outs), 0u);
    EXPECT_EQ(g.dump(outs), before);
}
