// NEOMEG_GRAPH_PROFILE's table: per kind of step, the time per run and the sum of the steps'
// fastest runs (the figure a shared machine's preemptions disturb least).
#include "../graph/step_profile.h"

#include <chrono>
#include <cmath>
#include <string>

#include "graph_test_util.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(StepProfile, SumsEachKindPerRunAndItsStepsFastestRuns) {
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(elemwise(Mode::RELU), {x});
    auto* b = g.insert1(elemwise(Mode::RELU), {a});
    auto* c = g.insert1(elemwise(Mode::NEGATE), {b});
    const std::vector<const OperatorNode*> nodes{a->owner(), b->owner(), c->owner()};

    StepProfile p(3);
    // Run 1: steps 10, 4, 1 ms; run 2: 2, 6, 3 ms (step 0 preempted in the first run).
    const int times[2][3] = {{10, 4, 1}, {2, 6, 3}};
    for (const auto& run : times) {
        for (size_t s = 0; s < 3; ++s)
            p.add_step(s, milliseconds(run[s]));
        p.add_run(milliseconds(run[0] + run[1] + run[2] + 1));
    }
    const std::string table = p.summary(nodes);
    // Per run: RELU (10 + 4 + 2 + 6) / 2 = 11, NEGATE (1 + 3) / 2 = 2; fastest: RELU 2 + 4,
    // NEGATE 1; the executor's millisecond per run outside the steps.
    EXPECT_TRUE(contains(table,
                         "2 runs, 3 steps, 14.000 ms per run, of which steps 13.000 ms, "
                         "executor 1.000 ms; the steps' fastest runs sum to 7.000 ms"))
            << table;
    EXPECT_TRUE(contains(table, "  11.000 ms (fastest 6.000 ms)  2 x Elemwise(mode=RELU)\n"))
            << table;
    EXPECT_TRUE(contains(table, "  2.000 ms (fastest 1.000 ms)  1 x Elemwise(mode=NEGATE)\n"))
            << table;
    // Slowest kind first.
    EXPECT_LT(table.find("RELU"), table.find("NEGATE")) << table;
}

TEST(StepProfile, AProfileWithoutTimedRunsReportsZeros) {
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(elemwise(Mode::RELU), {x});
    StepProfile p(1);  // an executable destroyed after its first (untimed) run
    const std::string table = p.summary({a->owner()});
    EXPECT_TRUE(contains(table, "0 runs, 1 steps, 0.000 ms per run")) << table;
    EXPECT_TRUE(contains(table, "fastest runs sum to 0.000 ms")) << table;
    EXPECT_TRUE(contains(table, "  0.000 ms (fastest 0.000 ms)  1 x Elemwise(mode=RELU)\n"))
            << table;
}

// jit.trace(profiling=True)'s source: the last run's steps, in order, each timed once, the first
// run included; nothing before a run or without enable_profile().
TEST(StepProfile, ExecutableKeepsTheLastRunsStepsInOrder) {
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(elemwise(Mode::RELU), {x});
    auto* b = g.insert1(elemwise(Mode::EXP), {a});
    auto* c = g.insert1(elemwise(Mode::NEGATE), {b});
    CompileOptions o;
    o.fuse_elemwise = false;  // three steps
    auto exe = g.compile({c}, o);
    exe->set_input("x", tensor({1, -2, 3, -4}, {4}));
    exe->execute();
    EXPECT_TRUE(exe->last_run_profile().empty());  // not asked for

    exe->enable_profile();
    EXPECT_TRUE(exe->last_run_profile().empty());  // no profiled run yet
    exe->execute();
    auto steps = exe->last_run_profile();
    ASSERT_EQ(steps.size(), 3u);
    // The executable runs its own copy of the graph: its nodes, with the same ops.
    EXPECT_EQ(steps[0].node->op().to_string(), a->owner()->op().to_string());
    EXPECT_EQ(steps[1].node->op().to_string(), b->owner()->op().to_string());
    EXPECT_EQ(steps[2].node->op().to_string(), c->owner()->op().to_string());
    for (size_t s = 0; s < steps.size(); ++s) {
        EXPECT_GE(steps[s].start_s, 0.0);
        EXPECT_LE(steps[s].start_s, steps[s].end_s);
        if (s) {
            EXPECT_LE(steps[s - 1].end_s, steps[s].start_s);
        }
    }
    exe->execute();
    auto again = exe->last_run_profile();
    ASSERT_EQ(again.size(), 3u);
    EXPECT_GE(again[0].start_s, steps[2].end_s);  // the newer run replaced the older
    expect_near(floats(exe->output(0)), {-std::exp(1.0f), -1, -std::exp(3.0f), -1}, 1e-5f);
}
