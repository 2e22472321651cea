// View forwarding in the executable's plan: Reshape, AddAxis, RemoveAxis and ReshapeTo of a
// contiguous var are that var's memory under another shape: no step, no copy, no buffer of their
// own. Results equal the op-by-op reference; memory read later is never overwritten in place; an
// output keeps storage of its own; layout changes that move elements still copy.
#include "graph_test_util.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_layouts.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

CompileOptions one_step_per_op() {
    CompileOptions o;
    o.fuse_elemwise = false;
    return o;
}

DeviceTensor ints(const std::vector<int32_t>& v) {
    return DeviceTensor::from_host(v.data(), {v.size()}, dnn::dtype::Int32, cpu());
}

}  // namespace

TEST(ViewForwarding, ReshapesOfAnIntermediateAreItsMemoryAndKeepItAlive) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 6}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::EXP), {x});
    auto* r = g.insert1(reshape({2, 12}), {e});  // e's memory
    param::AddAxis ap;
    ap.axis = {0};
    auto* a = g.insert1(ops::AddAxis(ap), {r});  // {1,2,12}: e's memory again
    // r dies at the NEGATE but e (the same memory) is read after it: no in-place write there.
    auto* n = g.insert1(elemwise(Mode::NEGATE), {a});
    auto* z = g.insert1(elemwise(Mode::MUL), {e, e});
    param::RemoveAxis rp;
    rp.axis = {0};
    auto* back = g.insert1(reshape({4, 6}), {g.insert1(ops::RemoveAxis(rp), {n})});
    auto* y = g.insert1(elemwise(Mode::ADD), {back, z});
    std::vector<VarNode*> outs{y};
    auto exe = g.compile(outs, one_step_per_op());
    // EXP, NEGATE, MUL, ADD run; the four views are not steps.
    EXPECT_EQ(exe->num_steps(), 4u);
    // e (with r, a) and n (with its views) are the intermediates: two buffers, one workspace
    // each step, and y has storage of its own.
    EXPECT_EQ(exe->arenas()[0].buffers.size(), 2u + 4u);
    std::mt19937 rng(11);
    for (int run = 0; run < 2; ++run) {
        auto xv = random_floats(24, rng);
        exe->set_input("x", tensor(xv, {4, 6}));
        exe->execute();
        auto got = floats(exe->output(0));
        expect_near(got, reference_eval(g, outs, {{x, xv}})[0]);
        for (size_t i = 0; i < 24; ++i)  // -e^x + e^2x, by hand
            ASSERT_NEAR(got[i], std::exp(2.0 * xv[i]) - std::exp(double(xv[i])), 1e-5) << i;
    }
}

TEST(ViewForwarding, ViewsOfInputsConstantsAndOutputs) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cpu());
    auto* c = g.constant(tensor({1, 2, 3, 4, 5, 6}, {6}), "c");
    auto* e = g.insert1(elemwise(Mode::EXP), {x});
    auto* flat_e = g.insert1(reshape({6}), {e});
    auto* y = g.insert1(elemwise(Mode::ADD), {g.insert1(reshape({6}), {x}), c});
    auto* z = g.insert1(elemwise(Mode::MUL),
                        {g.insert1(reshape({3, 2}), {c}), g.insert1(reshape({3, 2}), {x})});
    // e is an output (fresh storage each run) and read through a view by another output.
    auto* w = g.insert1(elemwise(Mode::SUB), {flat_e, y});
    std::vector<VarNode*> outs{y, z, e, w};
    auto exe = g.compile(outs, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 4u);  // ADD, MUL, EXP, SUB
    std::vector<float> xv{0.5f, -1, 2, 0, 1, -0.25f};
    exe->set_input("x", tensor(xv, {2, 3}));
    exe->execute();
    auto want = reference_eval(g, outs, {{x, xv}});
    for (size_t i = 0; i < outs.size(); ++i)
        expect_near(floats(exe->output(i)), want[i]);
    DeviceTensor first_e = exe->output(2);
    exe->set_input("x", tensor(std::vector<float>(6, 0.f), {2, 3}));
    exe->execute();
    expect_near(floats(first_e), want[2]);  // the next run wrote fresh storage
    expect_near(floats(exe->output(2)), std::vector<float>(6, 1.f));
}

TEST(ViewForwarding, AViewThatIsAnOutputHasStorageOfItsOwn) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 2}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* r = g.insert1(reshape({4}), {e});
    auto exe = g.compile({r}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 2u);  // the Reshape copies into the output's storage
    exe->set_input("x", tensor({1, 2, 3, 4}, {2, 2}));
    exe->execute();
    DeviceTensor kept = exe->output(0);
    exe->set_input("x", tensor({5, 6, 7, 8}, {2, 2}));
    exe->execute();
    EXPECT_EQ(floats(kept), (std::vector<float>{-1, -2, -3, -4}));
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{-5, -6, -7, -8}));
}

TEST(ViewForwarding, ReshapeToAConstantShapeIsForwardedAndElementMovesCopy) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* flat = g.insert1(ops::ReshapeTo(), {e, g.constant(ints({3, -1}), "shape")});
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    auto* t = g.insert1(ops::Dimshuffle(dp), {flat});  // {2,3}: moves elements, so a copy
    auto* y = g.insert1(elemwise(Mode::ADD), {t, x});
    auto exe = g.compile({y}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 3u);  // NEGATE, Dimshuffle, ADD
    exe->set_input("x", tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
    exe->execute();
    // flat = -[[1,2],[3,4],[5,6]]; t = its transpose -[[1,3,5],[2,4,6]]
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{0, -1, -2, 2, 1, 0}));
}

// A Broadcast of a constant read only by kernel-library ops is the constant with stride 0 (no
// step, no buffer): an embedding gradient's zeros, read by IndexingIncrMultiAxisVec. Read by a
// view op it is still copied. (Over 1 MiB, so that constant folding leaves it.)
TEST(ViewForwarding, ABroadcastOfAConstantIsReadInPlaceByKernels) {
    ComputingGraph g;
    auto* x = g.input("x", {512, 512}, dnn::dtype::Float32, cpu());
    auto* c = g.constant(tensor({0.5f, -1.0f}, {2, 1, 1}), "c");
    param::Broadcast bp;
    bp.shape = {2, 512, 512};
    auto* b = g.insert1(ops::Broadcast(bp), {c});
    auto* y = g.insert1(elemwise(Mode::MUL), {b, g.insert1(reshape({1, 512, 512}), {x})});
    param::Dimshuffle dp;
    dp.pattern = {0, 2, 1};
    auto* t = g.insert1(ops::Dimshuffle(dp), {g.insert1(ops::Broadcast(bp), {c})});
    auto only_y = g.compile({y}, one_step_per_op());
    EXPECT_EQ(only_y->num_steps(), 1u);  // MUL: the reshape and the broadcast are views
    EXPECT_EQ(only_y->planned_peak_bytes(), 0u);
    auto both = g.compile({y, t}, one_step_per_op());
    EXPECT_EQ(both->num_steps(), 3u);  // the Dimshuffle's broadcast is a step of its own
    std::mt19937 rng(3);
    auto xv = random_floats(512 * 512, rng);
    auto want = reference_eval(g, {y, t}, {{x, xv}});
    for (auto* exe : {only_y.get(), both.get()}) {
        exe->set_input("x", tensor(xv, {512, 512}));
        exe->execute();
        expect_near(floats(exe->output(0)), want[0]);
    }
    expect_near(floats(both->output(1)), want[1]);
}

// Subtensor in a graph: x[:2] (offset 0, contiguous) is the input's memory like a Reshape, a
// reversed slice at an offset (x[1:, ::-2]) is copied by its step.
TEST(ViewForwarding, SubtensorAtOffsetZeroIsForwardedOthersCopy) {
    constexpr int32_t N = param::kSubtensorNone;
    ComputingGraph g;
    auto* x = g.input("x", {4, 5}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    param::Subtensor head;
    head.axis = {0};
    head.begin = {N};
    head.end = {2};
    head.step = {N};
    head.is_index = {0};
    auto* h = g.insert1(ops::Subtensor(head), {e});  // rows 0, 1: e's memory
    param::Subtensor rev;
    rev.axis = {0, 1};
    rev.begin = {1, N};
    rev.end = {N, N};
    rev.step = {N, -2};
    rev.is_index = {0, 0};
    auto* r = g.insert1(ops::Subtensor(rev), {e});  // {3,3}: copied
    auto* y = g.insert1(elemwise(Mode::MUL), {h, h});
    auto* z = g.insert1(elemwise(Mode::ADD), {r, r});
    auto exe = g.compile({y, z}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 4u);  // NEGATE, the reversed Subtensor's copy, MUL, ADD
    std::vector<float> xv(20);
    for (size_t i = 0; i < 20; ++i)
        xv[i] = static_cast<float>(i);
    exe->set_input("x", tensor(xv, {4, 5}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{0, 1, 4, 9, 16, 25, 36, 49, 64, 81}));
    EXPECT_EQ(floats(exe->output(1)),
              (std::vector<float>{-18, -14, -10, -28, -24, -20, -38, -34, -30}));
}
