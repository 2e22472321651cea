// Constant folding: the graph before and after, and equal results.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

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

// A broadcast of a constant scalar (an embedding gradient's zeros) stays a step: folded, it was a
// constant of the whole shape, held for the executable's life, where the step's output lives in
// the arena until its reader. A broadcast that adds less than kFoldGrowthLimit still folds.
TEST(PassConstFold, LeavesABroadcastThatWouldMakeALargeConstant) {
    ComputingGraph g;
    const size_t big_rows = kFoldGrowthLimit / (64 * sizeof(float)) + 1;  // just over the limit
    auto* zero = g.constant(tensor({0.5f}, {1, 1}), "zero");
    param::Broadcast big, small;
    big.shape = {static_cast<int32_t>(big_rows), 64};
    small.shape = {4, 64};
    auto* x = g.input("x", {big_rows, 64}, dnn::dtype::Float32, cpu());
    auto* s = g.input("s", {4, 64}, dnn::dtype::Float32, cpu());
    auto* b = g.insert1(ops::Broadcast(big), {zero});
    auto* y = g.insert1(elemwise(Mode::ADD), {x, b});
    auto* c = g.insert1(ops::Broadcast(small), {zero});
    auto* z = g.insert1(elemwise(Mode::ADD), {s, c});
    std::vector<VarNode*> outs{y, z};
    EXPECT_EQ(fold_constants(g, outs), 1u);  // the small one
    EXPECT_EQ(outs[0]->owner()->inputs()[1], b);
    EXPECT_EQ(outs[1]->owner()->inputs()[1]->kind(), VarNode::Kind::Const);

    auto exe = g.compile(outs);
    std::vector<float> xs(big_rows * 64, 1.0f), ss(4 * 64, 2.0f);
    exe->set_input("x", tensor(xs, {big_rows, 64}));
    exe->set_input("s", tensor(ss, {4, 64}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), std::vector<float>(big_rows * 64, 1.5f));
    EXPECT_EQ(floats(exe->output(1)), std::vector<float>(4 * 64, 2.5f));
    // No constant of the large broadcast's shape (the executable reads the scalar in place).
    EXPECT_EQ(exe->dump().find("= const : {" + std::to_string(big_rows) + ",64}"),
              std::string::npos)
            << exe->dump();
}
