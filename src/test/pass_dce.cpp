// Dead-code elimination: the graph before and after.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

TEST(PassDce, ErasesWhatTheOutputsDoNotNeed) {
    ComputingGraph g;
    auto* x = g.input("x", {2}, dnn::dtype::Float32, cpu());
    auto* z = g.input("z", {2}, dnn::dtype::Float32, cpu());  // unread: an input stays
    auto* k = g.constant(tensor({1, 2}, {2}), "k");
    auto* unread = g.constant(tensor({3, 4}, {2}), "unread");
    auto* a = g.insert1(elemwise(Mode::RELU), {x});
    auto* dead = g.insert1(elemwise(Mode::EXP), {a});
    g.insert1(elemwise(Mode::ADD), {dead, z});
    auto* y = g.insert1(elemwise(Mode::ADD), {a, k});
    (void)unread;
    EXPECT_EQ(g.dump(),
              "%0 'x' = input : {2} float32 @cpu0\n"
              "%1 'z' = input : {2} float32 @cpu0\n"
              "%2 'k' = const [1, 2] : {2} float32 @cpu0\n"
              "%3 'unread' = const [3, 4] : {2} float32 @cpu0\n"
              "%4 = Elemwise(mode=RELU)(%0) : {2} float32\n"
              "%5 = Elemwise(mode=EXP)(%4) : {2} float32\n"
              "%6 = Elemwise(mode=ADD)(%5, %1) : {2} float32\n"
              "%7 = Elemwise(mode=ADD)(%4, %2) : {2} float32\n");
    EXPECT_EQ(eliminate_dead_code(g, {&y, 1}), 3u);  // two nodes, one constant
    EXPECT_EQ(g.dump(),
              "%0 'x' = input : {2} float32 @cpu0\n"
              "%1 'z' = input : {2} float32 @cpu0\n"
              "%2 'k' = const [1, 2] : {2} float32 @cpu0\n"
              "%4 = Elemwise(mode=RELU)(%0) : {2} float32\n"
              "%7 = Elemwise(mode=ADD)(%4, %2) : {2} float32\n");
    EXPECT_EQ(eliminate_dead_code(g, {&y, 1}), 0u);  // nothing left to erase
    // an output that is a constant keeps it
    EXPECT_EQ(eliminate_dead_code(g, {&k, 1}), 2u);
    EXPECT_EQ(g.dump(),
              "%0 'x' = input : {2} float32 @cpu0\n"
              "%1 'z' = input : {2} float32 @cpu0\n"
              "%2 'k' = const [1, 2] : {2} float32 @cpu0\n");
}
