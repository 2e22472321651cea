// The static memory planner: buffers alive at the same step never share bytes, memory is reused
// when lifetimes allow, on hand-made cases, random requests and the plans of compiled graphs.
#include "neomeg/graph/memory_planner.h"

#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

// The invariants of any plan, checked pair by pair.
void expect_valid_plan(std::span<const BufferRequest> reqs, const MemoryPlan& plan,
                       size_t alignment = 64) {
    ASSERT_EQ(plan.offsets.size(), reqs.size());
    auto align = [&](size_t n) { return (n + alignment - 1) / alignment * alignment; };
    size_t total = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        total += align(reqs[i].size);
        if (!reqs[i].size)
            continue;
        EXPECT_EQ(plan.offsets[i] % alignment, 0u) << "buffer " << i;
        EXPECT_LE(plan.offsets[i] + reqs[i].size, plan.arena_bytes) << "buffer " << i;
        for (size_t j = 0; j < i; ++j) {
            if (!reqs[j].size)
                continue;
            bool live_together = reqs[i].begin <= reqs[j].end && reqs[j].begin <= reqs[i].end;
            bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + reqs[j].size &&
                                 plan.offsets[j] < plan.offsets[i] + reqs[i].size;
            ASSERT_FALSE(live_together && bytes_overlap)
                    << "buffers " << j << " [" << reqs[j].begin << "," << reqs[j].end << "] at "
                    << plan.offsets[j] << "+" << reqs[j].size << " and " << i << " ["
                    << reqs[i].begin << "," << reqs[i].end << "] at " << plan.offsets[i] << "+"
                    << reqs[i].size;
        }
    }
    EXPECT_EQ(plan.total_bytes, total);
    EXPECT_LE(plan.live_peak_bytes, plan.arena_bytes);
    EXPECT_LE(plan.arena_bytes, plan.total_bytes);
}

void expect_valid_plans(const Executable& exe) {
    for (const auto& arena : exe.arenas())
        expect_valid_plan(arena.buffers, arena.plan, CachingAllocator::kAlignment);
}

}  // namespace

TEST(MemoryPlanner, ReusesMemoryOfBuffersThatAreDead) {
    // a chain: each buffer lives from its producer to its one reader
    std::vector<BufferRequest> chain;
    for (size_t s = 0; s < 10; ++s)
        chain.push_back({1000, s, s + 1});
    auto plan = plan_memory(chain);
    expect_valid_plan(chain, plan);
    EXPECT_EQ(plan.total_bytes, 10u * 1024);
    EXPECT_EQ(plan.live_peak_bytes, 2u * 1024);
    EXPECT_EQ(plan.arena_bytes, 2u * 1024);  // two at a time, alternating
}

TEST(MemoryPlanner, BestFitTakesTheSmallestGapThatFits) {
    // Largest first: P, Q, R, S stack up; at step 5 only Q and S are live, leaving a gap of
    // 3008 bytes (P's) and one of 1536 (R's). T goes into the smaller one; first fit would not.
    std::vector<BufferRequest> reqs{
            {3000, 0, 0},  // P
            {2000, 0, 9},  // Q
            {1500, 0, 0},  // R
            {1000, 0, 9},  // S
            {900, 5, 5},   // T
    };
    auto plan = plan_memory(reqs);
    expect_valid_plan(reqs, plan);
    EXPECT_EQ(plan.offsets[0], 0u);
    EXPECT_EQ(plan.offsets[1], 3008u);
    EXPECT_EQ(plan.offsets[2], 5056u);
    EXPECT_EQ(plan.offsets[3], 6592u);
    EXPECT_EQ(plan.offsets[4], 5056u);
    EXPECT_EQ(plan.arena_bytes, 7616u);
}

TEST(MemoryPlanner, EdgeCasesAndBadRequests) {
    EXPECT_EQ(plan_memory({}).arena_bytes, 0u);
    std::vector<BufferRequest> zero{{0, 0, 3}, {100, 1, 2}};
    auto plan = plan_memory(zero, 16);
    EXPECT_EQ(plan.arena_bytes, 112u);
    EXPECT_EQ(plan.total_bytes, 112u);
    std::vector<BufferRequest> bad{{8, 3, 2}};
    EXPECT_THROW(plan_memory(bad), dnn::ParamError);
    EXPECT_THROW(plan_memory(zero, 48), dnn::ParamError);
}

TEST(MemoryPlanner, RandomRequestsNeverOverlapWhileLive) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        size_t n = 1 + rng() % 60, steps = 1 + rng() % 40;
        std::vector<BufferRequest> reqs;
        for (size_t i = 0; i < n; ++i) {
            size_t b = rng() % steps, len = rng() % 8;
            size_t size = rng() % 4 == 0 ? 0 : 1 + rng() % 5000;
            reqs.push_back({size, b, b + len});
        }
        auto plan = plan_memory(reqs);
        expect_valid_plan(reqs, plan);
        if (testing::Test::HasFatalFailure())
            return;
    }
}

TEST(MemoryPlanner, ChainGraphPeaksFarBelowTheSumOfItsBuffers) {
    ComputingGraph g;
    auto* x = g.input("x", {64, 64}, dnn::dtype::Float32, cpu());
    VarNode* v = x;
    const Mode modes[] = {Mode::TANH, Mode::NEGATE, Mode::ABS, Mode::SIGMOID};
    for (int i = 0; i < 20; ++i)
        v = g.insert1(elemwise(modes[i % 4]), {v});
    // Unfused and out of place: 19 intermediates for the planner to place.
    CompileOptions options;
    options.fuse_elemwise = options.reuse_inplace = false;
    auto exe = g.compile({v}, options);
    expect_valid_plans(*exe);
    const size_t buf = 64 * 64 * 4;
    EXPECT_GE(exe->unplanned_total_bytes(), 19 * buf);  // 19 intermediates, the last is output
    EXPECT_LE(exe->planned_peak_bytes(), 2 * buf);      // two live at a time
    // One input and one output of a step live at once: the bound, which this plan meets.
    EXPECT_EQ(exe->live_peak_bytes(), 2 * buf);
    EXPECT_EQ(exe->planned_peak_bytes(), exe->live_peak_bytes());
    EXPECT_LT(exe->planned_peak_bytes(), exe->unplanned_total_bytes());
    std::mt19937 rng(8);
    auto xv = random_floats(64 * 64, rng);
    exe->set_input("x", tensor(xv, {64, 64}));
    exe->execute();
    expect_near(floats(exe->output(0)), reference_eval(g, {v}, {{x, xv}})[0]);
}

// A node that takes nothing from the arena (its output is the graph's, it needs no workspace)
// runs as soon as its input is ready, not where it was created: a training step's optimizer
// updates, written after the whole backward, would otherwise keep every gradient alive to the end.
// Here `a` feeds only such a node created last; run early, `a` dies before the chain below runs.
TEST(MemoryPlanner, ArenaFreeNodesRunAsSoonAsTheirInputsAreReady) {
    ComputingGraph g;
    auto* x = g.input("x", {64, 64}, dnn::dtype::Float32, cpu());
    VarNode* a = g.insert1(elemwise(Mode::TANH), {x});
    VarNode* v = x;
    for (int i = 0; i < 4; ++i)
        v = g.insert1(elemwise(i % 2 ? Mode::ABS : Mode::SIGMOID), {v});
    VarNode* update = g.insert1(elemwise(Mode::NEGATE), {a});
    CompileOptions options;
    options.fuse_elemwise = options.reuse_inplace = false;
    auto exe = g.compile({v, update}, options);
    expect_valid_plans(*exe);
    const size_t buf = 64 * 64 * 4;
    // Created last and run last, `update` kept `a` live beside the chain's two buffers: 3 * buf.
    EXPECT_EQ(exe->live_peak_bytes(), 2 * buf);
    std::mt19937 rng(10);
    auto xv = random_floats(64 * 64, rng);
    exe->set_input("x", tensor(xv, {64, 64}));
    exe->execute();
    auto want = reference_eval(g, {v, update}, {{x, xv}});
    expect_near(floats(exe->output(0)), want[0]);
    expect_near(floats(exe->output(1)), want[1]);
}

// The same where the update is a chain the fusion pass turns into one FusedElemwise (an optimizer
// update's form), a custom op but as free to move as an Elemwise: `a` (a matrix product,
// which nothing fuses) dies before the chain of products runs.
TEST(MemoryPlanner, FusedElementwiseUpdatesRunAsSoonAsTheirInputsAreReady) {
    ComputingGraph g;
    auto* x = g.input("x", {64, 64}, dnn::dtype::Float32, cpu());
    auto* y = g.input("y", {64, 64}, dnn::dtype::Float32, cpu());
    VarNode* a = g.insert1(ops::MatrixMul(), {x, x});
    VarNode* c = g.insert1(ops::MatrixMul(), {y, y});
    VarNode* v = g.insert1(ops::MatrixMul(), {c, c});
    // Two FUSE_MUL_ADD3 steps, as SGD with momentum writes its update (m' = g * s + m,
    // p' = m' * lr + p), both outputs of the step: fused into one kernel that writes m' as an
    // output and needs no workspace.
    VarNode* m2 = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {a, x, y});
    VarNode* update = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {m2, y, x});
    auto exe = g.compile({v, m2, update});
    expect_valid_plans(*exe);
    // Created last and run last, the update kept `a` live beside `c`: two buffers and a product's
    // workspace; run early, one buffer and the workspace (a few hundred bytes, oneDNN's choice).
    const size_t buf = 64 * 64 * 4;
    EXPECT_LT(exe->live_peak_bytes(), 2 * buf);
    std::mt19937 rng(11);
    auto xv = random_floats(64 * 64, rng), yv = random_floats(64 * 64, rng);
    exe->set_input("x", tensor(xv, {64, 64}));
    exe->set_input("y", tensor(yv, {64, 64}));
    exe->execute();
    auto want = reference_eval(g, {v, m2, update}, {{x, xv}, {y, yv}});
    for (size_t i = 0; i < 3; ++i)
        expect_near(floats(exe->output(i)), want[i], 1e-4);
}

// A node that reads only inputs and constants (a broadcast of a zero: an embedding gradient's
// start) runs just before its first reader, not where Kahn's order finds it ready (at once):
// here `b`, created first and read last, would stay live beside the chain's two buffers.
TEST(MemoryPlanner, SourceNodesRunJustBeforeTheirFirstReader) {
    ComputingGraph g;
    auto* row = g.input("row", {1, 64}, dnn::dtype::Float32, cpu());
    auto* x = g.input("x", {64, 64}, dnn::dtype::Float32, cpu());
    param::Broadcast bp;
    bp.shape = {64, 64};
    VarNode* b = g.insert1(ops::Broadcast(bp), {row});
    VarNode* v = x;
    for (int i = 0; i < 4; ++i)
        v = g.insert1(elemwise(i % 2 ? Mode::ABS : Mode::SIGMOID), {v});
    VarNode* y = g.insert1(elemwise(Mode::MUL), {v, b});
    CompileOptions options;
    options.fuse_elemwise = options.reuse_inplace = false;
    auto exe = g.compile({y}, options);
    expect_valid_plans(*exe);
    const size_t buf = 64 * 64 * 4;
    // Run first, `b` was live beside the chain's two buffers: 3 * buf.
    EXPECT_EQ(exe->live_peak_bytes(), 2 * buf);
    std::mt19937 rng(12);
    auto rv = random_floats(64, rng), xv = random_floats(64 * 64, rng);
    exe->set_input("row", tensor(rv, {1, 64}));
    exe->set_input("x", tensor(xv, {64, 64}));
    exe->execute();
    expect_near(floats(exe->output(0)), reference_eval(g, {y}, {{row, rv}, {x, xv}})[0]);
}

// Random DAGs of elementwise ops, broadcasts and reductions over shapes {8,16}, {1,16}, {8,1}:
// every compiled plan is valid and the results equal the naive kernels run op by op.
TEST(MemoryPlanner, RandomGraphsPlanValidlyAndComputeCorrectly) {
    std::mt19937 rng(9);
    const dnn::TensorShape shapes[] = {{8, 16}, {1, 16}, {8, 1}};
    const Mode unary[] = {Mode::TANH, Mode::NEGATE, Mode::ABS, Mode::SIGMOID, Mode::RELU};
    const Mode binary[] = {Mode::ADD, Mode::SUB, Mode::MUL, Mode::MAX};
    size_t steps_run = 0, planned = 0, unplanned = 0;
    for (int trial = 0; trial < 25; ++trial) {
        ComputingGraph g;
        std::vector<VarNode*> vars;
        std::map<const VarNode*, std::vector<float>> inputs;
        for (int i = 0; i < 3; ++i) {
            auto* in = g.input("in" + std::to_string(i), shapes[i], dnn::dtype::Float32, cpu());
            inputs[in] = random_floats(shapes[i].total_nr_elems(), rng);
            vars.push_back(in);
        }
        vars.push_back(g.constant(tensor(random_floats(16, rng), {1, 16}), "c"));
        int n_ops = 5 + static_cast<int>(rng() % 30);
        for (int i = 0; i < n_ops; ++i) {
            VarNode* a = vars[rng() % vars.size()];
            VarNode* b = vars[rng() % vars.size()];
            switch (rng() % 3) {
                case 0:
                    vars.push_back(g.insert1(elemwise(unary[rng() % 5]), {a}));
                    break;
                case 1:
                    vars.push_back(g.insert1(elemwise(binary[rng() % 4]), {a, b}));
                    break;
                default: {
                    int axis = a->shape()[0] == 1 ? 1 : 0;
                    vars.push_back(g.insert1(reduce(dnn::param::Reduce::Mode::MEAN, axis), {a}));
                }
            }
        }
        std::vector<VarNode*> outs{vars.back()};
        for (int i = 0; i < 2; ++i)
            outs.push_back(vars[3 + rng() % (vars.size() - 3)]);
        auto want = reference_eval(g, outs, inputs);
        for (bool passes : {false, true}) {
            CompileOptions opt;
            opt.fold_constants = opt.eliminate_common_subexpr = passes;
            auto exe = g.compile(outs, opt);
            expect_valid_plans(*exe);
            for (const auto& in : exe->inputs()) {
                size_t idx = in.name.back() - '0';
                exe->set_input(in.name, tensor(inputs.at(vars[idx]), in.layout));
            }
            exe->execute();
            for (size_t i = 0; i < outs.size(); ++i)
                expect_near(floats(exe->output(i)), want[i]);
            if (testing::Test::HasFatalFailure())
                return;
            steps_run += exe->num_steps();
            planned += exe->planned_peak_bytes();
            unplanned += exe->unplanned_total_bytes();
        }
    }
    EXPECT_GT(steps_run, 200u);  // the graphs were not trivial
    EXPECT_LT(planned, unplanned);
}
