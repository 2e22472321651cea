// In-place reuse: an elementwise step writes over an input that dies there. The planned arena
// shrinks, results stay right, and graph inputs and vars read later are never overwritten.
#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

CompileOptions options(bool inplace) {
    CompileOptions o;
    o.fuse_elemwise = false;  // one step per op, so that each reuse shows
    o.reuse_inplace = inplace;
    return o;
}

}  // namespace

TEST(InplaceReuse, AnInputThatDiesAtAnElementwiseStepGivesItsBuffer) {
    ComputingGraph g;
    const size_t n = 1000;
    auto* x = g.input("x", {n}, dnn::dtype::Float32, cpu());
    auto* two = g.constant(tensor({2}, {1}), "two");
    auto* a = g.insert1(elemwise(Mode::EXP), {x});       // x: a graph input, kept
    auto* b = g.insert1(elemwise(Mode::MUL), {a, two});  // a is read again at the end: kept
    auto* c = g.insert1(elemwise(Mode::RELU), {b});      // b dies here: c takes its buffer
    auto* s = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 0), {c});  // not elementwise
    auto* d = g.insert1(elemwise(Mode::SUB), {c, a});  // c and a die here; d is the output
    auto* y = g.insert1(elemwise(Mode::ADD), {d, s});
    std::vector<VarNode*> outs{y};
    auto plain = g.compile(outs, options(false));
    auto inplace = g.compile(outs, options(true));

    // a [0, 4], b [1, 2], c [2, 4], s [3, 5], d [4, 5] (y is an output: storage of its own).
    // Without reuse a, b, c and d are live together at step 2..4; with it c is b's buffer and
    // d is c's (or a's), so one buffer fewer is live at the peak.
    const size_t buf = (n * sizeof(float) + 63) / 64 * 64;
    EXPECT_EQ(plain->planned_peak_bytes(), 3 * buf + 64);
    EXPECT_EQ(inplace->planned_peak_bytes(), 2 * buf + 64);
    EXPECT_EQ(inplace->arenas()[0].buffers.size() + 2, plain->arenas()[0].buffers.size());

    std::mt19937 rng(3);
    auto xv = random_floats(n, rng);
    DeviceTensor xt = tensor(xv, {n});
    for (auto* exe : {plain.get(), inplace.get()}) {
        exe->set_input("x", xt);
        exe->execute();
        EXPECT_EQ(floats(xt), xv);  // the input is as it was
    }
    EXPECT_EQ(floats(inplace->output(0)), floats(plain->output(0)));
    // y = relu(2 e^x) - e^x + sum(relu(2 e^x)) = e^x + sum(2 e^x)
    double sum = 0;
    for (float v : xv)
        sum += 2 * std::exp(double(v));
    auto got = floats(inplace->output(0));
    for (size_t i = 0; i < n; ++i)
        ASSERT_NEAR(got[i], std::exp(double(xv[i])) + sum, 1e-5 * sum) << i;
}

TEST(InplaceReuse, BroadcastInputsAndNonElementwiseOpsKeepTheirBuffers) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 8}, dnn::dtype::Float32, cpu());
    auto* row = g.insert1(reduce(dnn::param::Reduce::Mode::MAX, 0), {x});  // {1,8}
    auto* e = g.insert1(elemwise(Mode::EXP), {row});                       // {1,8} in place
    auto* wide = g.insert1(elemwise(Mode::ADD), {x, e});                   // e broadcasts: no reuse
    auto* t = g.insert1(reshape({8, 4}), {wide});  // wide's memory: no step, no buffer
    auto* y = g.insert1(elemwise(Mode::NEGATE), {t});
    std::vector<VarNode*> outs{y};
    auto exe = g.compile(outs, options(true));
    // row, wide: two buffers; e shares row's, t is wide's.
    EXPECT_EQ(exe->arenas()[0].buffers.size(), 2u + 4u);  // and a workspace per step
    std::mt19937 rng(4);
    auto xv = random_floats(32, rng);
    exe->set_input("x", tensor(xv, {4, 8}));
    exe->execute();
    expect_near(floats(exe->output(0)), reference_eval(g, outs, {{x, xv}})[0]);
}
