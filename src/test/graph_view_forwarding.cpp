// View forwarding in the executable's plan: Reshape, AddAxis, RemoveAxis and ReshapeTo of a
// contiguous var are that var's memory under another shape, and a Subtensor, Dimshuffle or
// Broadcast is its memory under the view's strides and offset where every reader takes strided
// views: no step, no copy, no buffer of their own. Results equal the op-by-op reference and
// values by hand; memory read later is never overwritten in place; an output keeps storage of its
// own; a view no reader can take (a Reshape of a strided view, a dynamic step) still copies.
#include "graph_test_util.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/linalg.h"
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

TEST(ViewForwarding, ReshapeToAConstantShapeIsForwardedAndATransposeIsAView) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* flat = g.insert1(ops::ReshapeTo(), {e, g.constant(ints({3, -1}), "shape")});
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    auto* t = g.insert1(ops::Dimshuffle(dp), {flat});  // {2,3}: flat with strides {1, 2}
    auto* y = g.insert1(elemwise(Mode::ADD), {t, x});
    auto exe = g.compile({y}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 2u);  // NEGATE, ADD (reading the transpose in place)
    exe->set_input("x", tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
    exe->execute();
    // flat = -[[1,2],[3,4],[5,6]]; t = its transpose -[[1,3,5],[2,4,6]]
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{0, -1, -2, 2, 1, 0}));
}

// A Broadcast of a constant read only by kernel-library ops is the constant with stride 0 (no
// step, no buffer): an embedding gradient's zeros, read by IndexingIncrMultiAxisVec. A view op
// reading it takes the broadcast's strides too. (Over 1 MiB, so that constant folding leaves it.)
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
    // MUL and the Dimshuffle (an output: storage of its own), copying from the stride-0 constant.
    EXPECT_EQ(both->num_steps(), 2u);
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

namespace {

constexpr int32_t kNone = param::kSubtensorNone;

// x[begin:end:step] on each of `axes` (kNone for Python's None).
ops::Subtensor slice(std::vector<int32_t> axes, std::vector<int32_t> begin,
                     std::vector<int32_t> end, std::vector<int32_t> step) {
    param::Subtensor p;
    p.is_index.assign(axes.size(), 0);
    p.axis = std::move(axes);
    p.begin = std::move(begin);
    p.end = std::move(end);
    p.step = std::move(step);
    return ops::Subtensor(p);
}

ops::Dimshuffle transpose() {
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    return ops::Dimshuffle(dp);
}

std::vector<float> iota(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(i);
    return v;
}

}  // namespace

// Subtensor in a graph: x[:2] (offset 0, contiguous) and a reversed slice at an offset
// (x[1:, ::-2]) are both the input's memory, read in place by the kernels.
TEST(ViewForwarding, SubtensorsAtAnyOffsetAndStepAreTheInputsMemory) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 5}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* h = g.insert1(slice({0}, {kNone}, {2}, {kNone}), {e});                       // rows 0, 1
    auto* r = g.insert1(slice({0, 1}, {1, kNone}, {kNone, kNone}, {kNone, -2}), {e});  // {3,3}
    auto* y = g.insert1(elemwise(Mode::MUL), {h, h});
    auto* z = g.insert1(elemwise(Mode::ADD), {r, r});
    auto exe = g.compile({y, z}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 3u);  // NEGATE, MUL, ADD: no Subtensor copies
    exe->set_input("x", tensor(iota(20), {4, 5}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{0, 1, 4, 9, 16, 25, 36, 49, 64, 81}));
    EXPECT_EQ(floats(exe->output(1)),
              (std::vector<float>{-18, -14, -10, -28, -24, -20, -38, -34, -30}));
}

// Slices at non-zero offsets and negative steps of an input, a constant and an intermediate,
// views of views (a slice of a transpose of a slice), all read in place by elementwise, matmul
// and reduce kernels, over two runs with new inputs: no step but the kernels', each result equal
// to the op-by-op reference (every view copied) and to values by hand.
TEST(ViewForwarding, ViewsAtOffsetsOfInputsConstantsIntermediatesAndViewsOfViews) {
    ComputingGraph g;
    auto* x = g.input("x", {6, 7}, dnn::dtype::Float32, cpu());
    std::vector<float> cv = iota(42);
    for (float& v : cv)
        v = v * 0.5f - 3;
    auto* c = g.constant(tensor(cv, {6, 7}), "c");
    auto* e = g.insert1(elemwise(Mode::EXP), {x});
    // x[1:4, 2:6] + c[::-2, 5:1:-1]: an input and a constant, both {3,4}.
    auto* xs = g.insert1(slice({0, 1}, {1, 2}, {4, 6}, {kNone, kNone}), {x});
    auto* cs = g.insert1(slice({0, 1}, {kNone, 5}, {kNone, 1}, {-2, -1}), {c});
    auto* a = g.insert1(elemwise(Mode::ADD), {xs, cs});
    // e[2:, 1::2] (an arena var at an offset, {4,3}), transposed ({3,4}), then [::-1, 1:] of
    // that ({3,3}): a view of a view of a view.
    auto* es = g.insert1(slice({0, 1}, {2, 1}, {kNone, kNone}, {kNone, 2}), {e});
    auto* et = g.insert1(transpose(), {es});
    auto* ev = g.insert1(slice({0, 1}, {kNone, 1}, {kNone, kNone}, {-1, kNone}), {et});
    // matmul of the {3,4} sum with a {4,3} view, the {3,3} view-of-views added, summed by rows.
    auto* m = g.insert1(ops::MatrixMul(), {a, es});
    auto* s = g.insert1(elemwise(Mode::ADD), {m, ev});
    auto* sum = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 1), {s});
    std::vector<VarNode*> outs{a, s, sum};
    auto exe = g.compile(outs, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 5u);  // EXP, ADD, MatrixMul, ADD, Reduce
    std::mt19937 rng(5);
    for (int run = 0; run < 2; ++run) {
        auto xv = random_floats(42, rng);
        exe->set_input("x", tensor(xv, {6, 7}));
        exe->execute();
        auto want = reference_eval(g, outs, {{x, xv}});
        for (size_t i = 0; i < outs.size(); ++i)
            expect_near(floats(exe->output(i)), want[i]);
        // By hand: a[i][j] = x[1+i][2+j] + c[5-2i][5-j]; s = a @ es + ev.
        auto got_a = floats(exe->output(0));
        auto got_s = floats(exe->output(1));
        auto X = [&](int i, int j) { return double(xv[i * 7 + j]); };
        auto C = [&](int i, int j) { return double(cv[i * 7 + j]); };
        auto ES = [&](int i, int j) { return std::exp(X(2 + i, 1 + 2 * j)); };  // {4,3}
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 4; ++j)
                ASSERT_NEAR(got_a[i * 4 + j], X(1 + i, 2 + j) + C(5 - 2 * i, 5 - j), 1e-5);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                double acc = ES(1 + j, 2 - i);  // ev[i][j] = et[2-i][1+j] = es[1+j][2-i]
                for (int k = 0; k < 4; ++k)
                    acc += (X(1 + i, 2 + k) + C(5 - 2 * i, 5 - k)) * ES(k, j);
                ASSERT_NEAR(got_s[i * 3 + j], acc, 1e-4 * (1 + std::abs(acc))) << i << "," << j;
            }
    }
}

// e and its reversal e[::-1] (rows in reverse order, each row read forwards: no copy in the
// kernel) both die at an elementwise ADD whose result is an intermediate: the ADD may not write
// into e's buffer in place, as it still reads the reversal from there (and likewise for a view at
// an offset, e[1:] - e[:-1]). With fusion and without.
TEST(ViewForwarding, AViewReadByAnInPlaceEligibleOpIsNotOverwritten) {
    for (bool fuse : {false, true}) {
        ComputingGraph g;
        auto* x = g.input("x", {8, 16}, dnn::dtype::Float32, cpu());
        auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
        auto* r = g.insert1(slice({0}, {kNone}, {kNone}, {-1}), {e});
        auto* y = g.insert1(elemwise(Mode::ADD), {e, r});
        auto* f = g.insert1(elemwise(Mode::EXP), {x});
        auto* tail = g.insert1(slice({0}, {1}, {kNone}, {kNone}), {f});
        auto* head = g.insert1(slice({0}, {kNone}, {-1}, {kNone}), {f});
        auto* d = g.insert1(elemwise(Mode::SUB), {tail, head});
        std::vector<VarNode*> outs{g.insert1(elemwise(Mode::MUL), {y, y}),
                                   g.insert1(elemwise(Mode::MUL), {d, d})};
        CompileOptions o;
        o.fuse_elemwise = fuse;
        auto exe = g.compile(outs, o);
        if (!fuse) {
            EXPECT_EQ(exe->num_steps(), 6u);  // no Subtensor step
        }
        std::mt19937 rng(7);
        auto xv = random_floats(128, rng);
        exe->set_input("x", tensor(xv, {8, 16}));
        exe->execute();
        auto got_y = floats(exe->output(0)), got_d = floats(exe->output(1));
        for (size_t i = 0; i < 8; ++i)
            for (size_t j = 0; j < 16; ++j) {
                double yi = -double(xv[i * 16 + j]) - double(xv[(7 - i) * 16 + j]);
                ASSERT_NEAR(got_y[i * 16 + j], yi * yi, 1e-5) << i << "," << j << " fuse " << fuse;
            }
        for (size_t i = 0; i < 7 * 16; ++i) {
            double di = std::exp(double(xv[i + 16])) - std::exp(double(xv[i]));
            ASSERT_NEAR(got_d[i], di * di, 1e-5) << i << " fuse " << fuse;
        }
    }
}

// A strided view that is an output gets storage of its own (a step copies it), and keeps its
// values after the next run; one read by a Reshape that cannot express it (x[:, 1:3] flattened)
// is copied by its step, and the Reshape of that copy is forwarded.
TEST(ViewForwarding, StridedViewsAsOutputsAndUnderReshapesAreCopied) {
    ComputingGraph g;
    auto* x = g.input("x", {3, 4}, dnn::dtype::Float32, cpu());
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* out = g.insert1(slice({1}, {kNone}, {kNone}, {-2}), {e});  // {3,2}: e[:, ::-2]
    auto* mid = g.insert1(slice({1}, {1}, {3}, {kNone}), {e});       // {3,2}: e[:, 1:3]
    auto* flat = g.insert1(reshape({6}), {mid});
    auto* y = g.insert1(elemwise(Mode::MUL), {flat, flat});
    auto exe = g.compile({out, y}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 4u);  // NEGATE, both Subtensors' copies, MUL
    exe->set_input("x", tensor(iota(12), {3, 4}));
    exe->execute();
    DeviceTensor kept = exe->output(0);
    EXPECT_EQ(floats(kept), (std::vector<float>{-3, -1, -7, -5, -11, -9}));
    EXPECT_EQ(floats(exe->output(1)), (std::vector<float>{1, 4, 25, 36, 81, 100}));
    exe->set_input("x", tensor(std::vector<float>(12, 1.f), {3, 4}));
    exe->execute();
    EXPECT_EQ(floats(kept), (std::vector<float>{-3, -1, -7, -5, -11, -9}));
    EXPECT_EQ(floats(exe->output(0)), std::vector<float>(6, -1.f));
}

// A strided view read by a step of dynamic shape (TakePrefix of a count computed in the run) is
// left alone: copied by its step; the result is the view's first count elements.
TEST(ViewForwarding, AViewReadByADynamicStepIsCopied) {
    ComputingGraph g;
    auto* x = g.input("x", {8}, dnn::dtype::Float32, cpu());
    auto* zero = g.constant(tensor({0}, {1}), "zero");
    const auto& taken = g.insert(ops::CondTake(), {x, g.insert1(elemwise(Mode::LT), {zero, x})});
    auto* e = g.insert1(elemwise(Mode::NEGATE), {x});
    auto* rev = g.insert1(slice({0}, {kNone}, {kNone}, {-1}), {e});
    auto* y = g.insert1(ops::TakePrefix(), {rev, taken[2]});
    ASSERT_TRUE(y->shape_dynamic());
    auto exe = g.compile({y}, one_step_per_op());
    EXPECT_EQ(exe->num_steps(), 5u);  // LT, CondTake, NEGATE, the reversal's copy, TakePrefix
    exe->set_input("x", tensor({1, -2, 3, -4, 5, 6, -7, 8}, {8}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{-8, 7, -6, -5, 4}));
}

// A transposed NHWC batch (channels-last strides) is read in place by every reader, the
// convolutions too: the forward and the filter gradient take it as src beside a plain dst or
// diff, and the data gradient a transposed diff beside its plain grad (the x86 convolution runs
// its blocked kernel and reorders the channels-last operand in, conv_common.h's any_desc). Odd
// channels (5 in, 3 out), and the first image alone (batch 1).
TEST(ViewForwarding, AChannelsLastViewIsReadInPlaceByConvolutions) {
    std::mt19937 rng(9);
    for (size_t n : {2, 1}) {
        SCOPED_TRACE(n);
        ComputingGraph g;
        auto* x = g.input("x", {n, 6, 7, 5}, dnn::dtype::Float32, cpu());
        auto* dy = g.input("dy", {n, 3, 6, 7}, dnn::dtype::Float32, cpu());
        auto* dy_nhwc = g.input("dy_nhwc", {n, 6, 7, 3}, dnn::dtype::Float32, cpu());
        param::Dimshuffle dp;
        dp.pattern = {0, 3, 1, 2};
        auto* t = g.insert1(ops::Dimshuffle(dp), {x});         // {n,5,6,7}, channels-last strides
        auto* dt = g.insert1(ops::Dimshuffle(dp), {dy_nhwc});  // {n,3,6,7}, channels-last
        auto* f = g.constant(tensor(random_floats(3 * 5 * 3 * 3, rng), {3, 5, 3, 3}), "filter");
        dnn::param::Convolution cp;
        cp.padding = {1, 1};
        auto* conv = g.insert1(ops::ConvolutionForward(cp), {t, f});
        auto* dw = g.insert1(ops::ConvolutionBackwardFilter(cp), {t, dy});
        auto* dx = g.insert1(ops::ConvolutionBackwardData(cp), {f, dt});
        auto* relu = g.insert1(elemwise(Mode::RELU), {t});
        std::vector<VarNode*> outs{conv, dw, dx, relu};
        auto exe = g.compile(outs, one_step_per_op());
        EXPECT_EQ(exe->num_steps(), 4u);  // the three convolutions and RELU; no copy
        std::map<const VarNode*, std::vector<float>> in{
                {x, random_floats(n * 6 * 7 * 5, rng)},
                {dy, random_floats(n * 3 * 6 * 7, rng)},
                {dy_nhwc, random_floats(n * 6 * 7 * 3, rng)}};
        auto want = reference_eval(g, outs, in);
        exe->set_input("x", tensor(in[x], {n, 6, 7, 5}));
        exe->set_input("dy", tensor(in[dy], {n, 3, 6, 7}));
        exe->set_input("dy_nhwc", tensor(in[dy_nhwc], {n, 6, 7, 3}));
        exe->execute();
        for (size_t i = 0; i < outs.size(); ++i) {
            SCOPED_TRACE(i);
            expect_near(floats(exe->output(i)), want[i]);
        }
    }
}
