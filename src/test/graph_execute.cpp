// Executing compiled graphs: results equal plain loops and the naive kernels run op by op; runs
// repeat with new inputs and nothing rebuilt; edge cases of outputs and inputs.
#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

// sum over j of relu(x @ w + b)[i, j], with plain loops.
std::vector<float> mlp_by_hand(const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b, size_t m, size_t k, size_t n) {
    std::vector<float> out(m, 0);
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            double acc = b[j];
            for (size_t t = 0; t < k; ++t)
                acc += double(x[i * k + t]) * w[t * n + j];
            out[i] += static_cast<float>(std::max(acc, 0.0));
        }
    return out;
}

}  // namespace

TEST(GraphExecute, MatmulBiasReluReduceEqualsPlainLoops) {
    std::mt19937 rng(1);
    const size_t m = 5, k = 7, n = 4;
    auto wv = random_floats(k * n, rng), bv = random_floats(n, rng);
    ComputingGraph g;
    auto* x = g.input("x", {m, k}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(wv, {k, n}), "w");
    auto* b = g.constant(tensor(bv, {n}), "b");
    auto* h = g.insert1(ops::MatrixMul(), {x, w});
    auto* hb = g.insert1(elemwise(Mode::ADD), {h, b});
    auto* r = g.insert1(elemwise(Mode::RELU), {hb});
    auto* s = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 1), {r});
    auto* y = g.insert1(reshape({-1}), {s});
    auto exe = g.compile({y});
    ASSERT_EQ(exe->inputs().size(), 1u);
    EXPECT_EQ(exe->inputs()[0].name, "x");
    EXPECT_EQ(exe->num_steps(), 4u);  // the ADD and the RELU fuse into one step
    auto xv = random_floats(m * k, rng);
    exe->set_input("x", tensor(xv, {m, k}));
    exe->execute();
    EXPECT_EQ(exe->output(0).shape().to_string(), "{5}");
    expect_near(floats(exe->output(0)), mlp_by_hand(xv, wv, bv, m, k, n));
}

TEST(GraphExecute, ConvChainEqualsNaiveKernelsOpByOp) {
    std::mt19937 rng(2);
    ComputingGraph g;
    auto* x = g.input("x", {2, 3, 8, 8}, dnn::dtype::Float32, cpu());
    auto* f = g.constant(tensor(random_floats(4 * 3 * 3 * 3, rng), {4, 3, 3, 3}), "filter");
    auto* bias = g.constant(tensor(random_floats(4, rng), {1, 4, 1, 1}), "bias");
    dnn::param::Convolution cp;
    cp.padding = {1, 1};
    auto* c = g.insert1(ops::ConvolutionForward(cp), {x, f});
    auto* cb = g.insert1(elemwise(Mode::ADD), {c, bias});
    auto* act = g.insert1(elemwise(Mode::RELU), {cb});
    auto* pooled = g.insert1(ops::PoolingForward(), {act});  // 2x2 max
    auto* flat = g.insert1(reshape({2, -1}), {pooled});
    auto* fc = g.constant(tensor(random_floats(64 * 5, rng), {64, 5}), "fc");
    auto* logits = g.insert1(ops::MatrixMul(), {flat, fc});
    auto* mean = g.insert1(reduce(dnn::param::Reduce::Mode::MEAN, 0), {logits});
    std::vector<VarNode*> outs{logits, mean};
    auto exe = g.compile(outs);
    auto xv = random_floats(2 * 3 * 8 * 8, rng);
    exe->set_input(0, tensor(xv, {2, 3, 8, 8}));
    exe->execute();
    auto want = reference_eval(g, outs, {{x, xv}});
    expect_near(floats(exe->output(0)), want[0]);
    expect_near(floats(exe->output(1)), want[1]);
    EXPECT_EQ(exe->output(1).shape().to_string(), "{1,5}");
}

TEST(GraphExecute, RepeatedRunsWithNewInputsRebuildNothing) {
    std::mt19937 rng(3);
    ComputingGraph g;
    auto* a = g.input("a", {3, 4}, dnn::dtype::Float32, cpu());
    auto* b = g.input("b", {4, 2}, dnn::dtype::Float32, cpu());
    auto* p = g.insert1(ops::MatrixMul(), {a, b});
    auto* t = g.insert1(elemwise(Mode::TANH), {p});
    auto* y = g.insert1(elemwise(Mode::MUL), {t, p});
    auto exe = g.compile({y});
    size_t peak = exe->planned_peak_bytes();
    std::vector<std::vector<float>> first;
    DeviceTensor kept;
    for (int run = 0; run < 5; ++run) {
        auto av = random_floats(12, rng), bv = random_floats(8, rng);
        exe->set_input("a", tensor(av, {3, 4}));
        exe->set_input("b", tensor(bv, {4, 2}));
        exe->execute();
        auto want = reference_eval(g, {y}, {{a, av}, {b, bv}});
        expect_near(floats(exe->output(0)), want[0]);
        if (run == 0) {
            kept = exe->output(0);
            first = want;
        }
        EXPECT_EQ(exe->planned_peak_bytes(), peak);
        EXPECT_EQ(exe->num_steps(), 2u);  // the Elemwise chain is one fused step
    }
    // the first run's output was not overwritten by the later runs
    expect_near(floats(kept), first[0]);
}

TEST(GraphExecute, OutputsThatAreInputsConstantsOrRepeated) {
    ComputingGraph g;
    auto* x = g.input("x", {2}, dnn::dtype::Float32, cpu());
    auto* c = g.constant(tensor({5, 6}, {2}), "c");
    auto* y = g.insert1(elemwise(Mode::ADD), {x, c});
    auto* z = g.insert1(elemwise(Mode::NEGATE), {y});  // y is an output and z's input
    std::vector<VarNode*> outs{x, c, y, y, z};
    auto exe = g.compile(outs);
    EXPECT_THROW(exe->output(0), dnn::ParamError);  // before the first run
    exe->set_input("x", tensor({1, 2}, {2}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{1, 2}));
    EXPECT_EQ(floats(exe->output(1)), (std::vector<float>{5, 6}));
    EXPECT_EQ(floats(exe->output(2)), (std::vector<float>{6, 8}));
    EXPECT_EQ(floats(exe->output(3)), (std::vector<float>{6, 8}));
    EXPECT_EQ(floats(exe->output(4)), (std::vector<float>{-6, -8}));
    EXPECT_EQ(exe->outputs()[1].name, "c");
    EXPECT_THROW(exe->output(5), dnn::ParamError);
}

TEST(GraphExecute, MultiOutputOpsAndGenerators) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 2}, dnn::dtype::Float32, cpu());
    dnn::param::Split sp;
    sp.sizes = {1, 3};
    const auto& parts = g.insert(ops::Split(sp), {x});
    auto* top = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 0), {parts[1]});
    dnn::param::Fill fp;
    fp.value = 10;
    InsertOptions opt;
    opt.output_shapes = {{1, 2}};
    opt.comp_node = cpu();
    auto* ten = g.insert1(ops::Fill(fp), {}, opt);
    auto* y = g.insert1(elemwise(Mode::ADD), {top, ten});
    // without folding the Fill runs every time
    CompileOptions no_passes;
    no_passes.fold_constants = false;
    auto exe = g.compile({y}, no_passes);
    EXPECT_EQ(exe->num_steps(), 4u);
    exe->set_input("x", tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{25, 28}));
}

TEST(GraphExecute, BadInputsAreClearErrors) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 2}, dnn::dtype::Float32, cpu());
    auto* unused = g.input("unused", {1}, dnn::dtype::Float32, cpu());
    (void)unused;
    auto* y = g.insert1(elemwise(Mode::RELU), {x});
    auto exe = g.compile({y});
    ASSERT_EQ(exe->inputs().size(), 1u);  // only what the outputs need
    try {
        exe->execute();
        FAIL();
    } catch (const dnn::ParamError& e) {
        EXPECT_NE(std::string(e.what()).find("'x' was never set"), std::string::npos) << e.what();
    }
    EXPECT_THROW(exe->set_input("unused", tensor({1}, {1})), dnn::ParamError);
    EXPECT_THROW(exe->set_input("x", tensor({1, 2, 3}, {3})), dnn::ParamError);
    std::vector<int32_t> iv(4, 1);
    EXPECT_THROW(exe->set_input(
                         "x", DeviceTensor::from_host(iv.data(), {2, 2}, dnn::dtype::Int32, cpu())),
                 dnn::ParamError);
    EXPECT_THROW(exe->set_input("x", tensor({1, 2, 3, 4}, {2, 2}, CompNode::load("cpu1"))),
                 dnn::ParamError);
    EXPECT_THROW(exe->set_input(3, tensor({1, 2, 3, 4}, {2, 2})), dnn::ParamError);
    exe->set_input("x", tensor({-1, 2, -3, 4}, {2, 2}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{0, 2, 0, 4}));
}

TEST(GraphExecute, CompilingLeavesTheGraphAsItWas) {
    ComputingGraph g;
    auto* x = g.input("x", {2}, dnn::dtype::Float32, cpu());
    auto* c = g.constant(tensor({1, 1}, {2}), "one");
    auto* two = g.insert1(elemwise(Mode::ADD), {c, c});  // folds in the compiled copy
    auto* y = g.insert1(elemwise(Mode::MUL), {x, two});
    std::string before = g.dump({&y, 1});
    auto exe = g.compile({y});
    EXPECT_EQ(g.dump({&y, 1}), before);
    EXPECT_EQ(exe->num_steps(), 1u);
    exe->set_input("x", tensor({3, 4}, {2}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{6, 8}));
}

TEST(GraphExecute, ViewOpsCopyTheirViewIntoPlannedMemory) {
    ComputingGraph g;
    auto* x = g.input("x", {1, 3}, dnn::dtype::Float32, cpu());
    param::Broadcast bp;
    bp.shape = {2, 3};
    auto* b = g.insert1(ops::Broadcast(bp), {x});
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    auto* t = g.insert1(ops::Dimshuffle(dp), {b});  // {3,2}
    param::AddAxis ap;
    ap.axis = {0};
    auto* a = g.insert1(ops::AddAxis(ap), {t});  // {1,3,2}
    param::RemoveAxis rp;
    rp.axis = {0};
    auto* r = g.insert1(ops::RemoveAxis(rp), {a});  // {3,2}
    auto* y = g.insert1(elemwise(Mode::MUL), {r, t});
    EXPECT_EQ(y->shape().to_string(), "{3,2}");
    auto exe = g.compile({t, y});
    exe->set_input("x", tensor({1, 2, 3}, {1, 3}));
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{1, 1, 2, 2, 3, 3}));
    EXPECT_EQ(floats(exe->output(1)), (std::vector<float>{1, 1, 4, 4, 9, 9}));
}

TEST(GraphExecute, EmptyTensorsRunThrough) {
    ComputingGraph g;
    auto* x = g.input("x", {0, 3}, dnn::dtype::Float32, cpu());
    auto* r = g.insert1(elemwise(Mode::RELU), {x});
    auto* s = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 0), {r});  // {1,3} of zeros
    auto exe = g.compile({r, s});
    exe->set_input("x", tensor({}, {0, 3}));
    exe->execute();
    EXPECT_EQ(exe->output(0).shape().to_string(), "{0,3}");
    EXPECT_EQ(floats(exe->output(1)), (std::vector<float>{0, 0, 0}));
}

// A filter computed inside the graph lies in the arena, at the same address on every run: the
// x86 convolution's weight cache (keyed by storage and version) must see each run's new values,
// as must a filter fed as an input and replaced between runs, or fed unchanged.
TEST(GraphExecute, ConvolutionSeesEachRunsFilter) {
    std::mt19937 rng(12);
    ComputingGraph g;
    auto* x = g.input("x", {2, 3, 6, 6}, dnn::dtype::Float32, cpu());
    auto* w = g.input("w", {4, 3, 3, 3}, dnn::dtype::Float32, cpu());
    auto* two = g.constant(tensor({2.f}, {1}), "two");
    dnn::param::Convolution cp;
    cp.padding = {1, 1};
    auto* scaled = g.insert1(elemwise(Mode::MUL), {w, two});
    auto* in_arena = g.insert1(ops::ConvolutionForward(cp), {x, scaled});
    auto* fed = g.insert1(ops::ConvolutionForward(cp), {x, w});
    std::vector<VarNode*> outs{in_arena, fed};
    auto exe = g.compile(outs);
    auto xv = random_floats(2 * 3 * 6 * 6, rng);
    exe->set_input("x", tensor(xv, {2, 3, 6, 6}));
    std::vector<float> wv;
    for (int run = 0; run < 9; ++run) {
        if (run % 3 == 0) {  // a new filter; the next two runs keep it (storage and version)
            wv = random_floats(4 * 3 * 3 * 3, rng);
            exe->set_input("w", tensor(wv, {4, 3, 3, 3}));
        }
        exe->execute();
        auto want = reference_eval(g, outs, {{x, xv}, {w, wv}});
        expect_near(floats(exe->output(0)), want[0]);
        expect_near(floats(exe->output(1)), want[1]);
    }
}

TEST(GraphExecute, SharedInputIsReadInPlaceAndBoundsAreChecked) {
    // A value fed by DeviceTensor::share (a region of another owner's storage) is read where it
    // lies: a change to the storage between runs shows in the next run's result.
    auto blob = std::make_shared<Blob>(cpu(), 8 * sizeof(float));
    auto* data = reinterpret_cast<float*>(blob->ptr());
    for (int i = 0; i < 8; ++i)
        data[i] = static_cast<float>(i);
    dnn::TensorLayout four({4}, dnn::dtype::Float32);
    DeviceTensor tail = DeviceTensor::share(blob, 4 * sizeof(float), four);
    EXPECT_EQ(floats(tail), (std::vector<float>{4, 5, 6, 7}));
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* y = g.insert1(elemwise(Mode::ADD), {x, x});
    auto exe = g.compile({y});
    exe->set_input("x", tail);
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{8, 10, 12, 14}));
    data[4] = 100;
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{200, 10, 12, 14}));
    // Outside the storage, not contiguous, or no storage: errors, never a wild read.
    EXPECT_THROW(DeviceTensor::share(blob, 5 * sizeof(float), four), dnn::ParamError);
    EXPECT_THROW(DeviceTensor::share(blob, 9 * sizeof(float), four), dnn::ParamError);
    dnn::TensorLayout strided({2, 2}, {4, 1}, dnn::dtype::Float32);
    EXPECT_THROW(DeviceTensor::share(blob, 0, strided), dnn::ParamError);
    EXPECT_THROW(DeviceTensor::share(nullptr, 0, four), dnn::ParamError);
    // An empty layout (strides from max(dim, 1), as TensorLayout makes them) addresses nothing:
    // shared at the end of the storage, it is an empty tensor.
    dnn::TensorLayout empty({10, 0}, dnn::dtype::Float32);
    DeviceTensor none = DeviceTensor::share(blob, 8 * sizeof(float), empty);
    EXPECT_EQ(none.layout().total_nr_elems(), 0u);
    EXPECT_EQ(none.layout().to_vector(), (std::vector<size_t>{10, 0}));
}
