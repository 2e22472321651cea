// BatchNorm folded into the convolution before it (inference): the graph before and after, and
// the folded graph's results against the unfolded graph's.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/norm.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

#define GEOMETRY(p) \
    "mode=CROSS_CORRELATION, stride=[1,1], padding=[" #p "," #p "], dilation=[1,1], group=1"

CompileOptions unoptimized() {
    CompileOptions o;
    o.fuse_conv_bias = o.fuse_elemwise = o.propagate_layouts = false;
    return o;
}

// 4 channels of statistics, scale and shift; var > 0.
struct Bn {
    std::vector<float> scale, shift, mean, var;
};

Bn random_bn(std::mt19937& rng) {
    return {random_floats(4, rng, 0.5f, 2), random_floats(4, rng), random_floats(4, rng),
            random_floats(4, rng, 0.1f, 3)};
}

std::vector<float> run1(Executable& exe, const std::vector<float>& xv) {
    exe.set_input("x", tensor(xv, {2, 3, 6, 6}));
    exe.execute();
    return floats(exe.output(0));
}

}  // namespace

TEST(PassFoldBatchNorm, BatchNormOpFoldsIntoConvolutionAndItsBias) {
    std::mt19937 rng(6);
    ComputingGraph g;
    const dnn::TensorShape ch{1, 4, 1, 1};
    auto* x = g.input("x", {2, 3, 6, 6}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(4 * 3 * 9, rng), {4, 3, 3, 3}), "w");
    auto* b = g.constant(tensor(random_floats(4, rng), ch), "b");
    Bn bn = random_bn(rng);
    dnn::param::BatchNorm bp;
    bp.fwd_mode = dnn::param::BatchNorm::FwdMode::INFERENCE;
    bp.epsilon = 1e-3f;
    auto* c = g.insert1(ops::ConvolutionForward(), {x, w});
    auto* biased = g.insert1(elemwise(Mode::ADD), {c, b});
    VarNode* bn_in[] = {biased, g.constant(tensor(bn.scale, ch), "scale"),
                        g.constant(tensor(bn.shift, ch), "shift"),
                        g.constant(tensor(bn.mean, ch), "mean"),
                        g.constant(tensor(bn.var, ch), "var")};
    auto* y = g.insert(ops::BatchNormForward(bp), bn_in)[0];
    std::vector<VarNode*> outs{y};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%1 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%2 'b' = const [-0.330388, 0.227618, 0.46947, -0.501546] : {1,4,1,1} float32 @cpu0\n"
              "%5 'scale' = const [0.783661, 1.09358, 0.996656, 1.34011] : {1,4,1,1} float32 @cpu0\n"
              "%6 'shift' = const [0.688457, 0.111666, 0.230048, 0.104287] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%7 'mean' = const [0.770528, -0.0752783, 0.953106, 0.341312] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%8 'var' = const [2.52703, 2.66267, 0.624391, 1.49114] : {1,4,1,1} float32 @cpu0\n"
              "%3 = ConvolutionForward(" GEOMETRY(0) ")(%0, %1) : {2,4,4,4} float32\n"
              "%4 = Elemwise(mode=ADD)(%3, %2) : {2,4,4,4} float32\n"
              "%9, %10, %11, %12, %13 = BatchNormForward(fwd_mode=INFERENCE, epsilon=0.001, "
              "momentum=0.9)(%4, %5, %6, %7, %8) : {2,4,4,4} float32, {1,4,1,1} float32, {1,4,1,1} "
              "float32, {1,4,1,1} float32, {1,4,1,1} float32\n"
              "outputs: %9\n");
    auto plain = g.compile(outs, unoptimized());

    EXPECT_EQ(fold_batch_norm(g, outs), 1u);
    eliminate_dead_code(g, outs);
    // The filter scaled per channel; bias (b - mean) * scale / sqrt(var + eps) + shift.
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%14 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%15 = const [0.145843, 0.314624, -0.379472, -0.820393] : {1,4,1,1} float32 @cpu0\n"
              "%16 = ConvolutionForward(" GEOMETRY(0) ")(%0, %14) : {2,4,4,4} float32\n"
              "%17 = Elemwise(mode=ADD)(%16, %15) : {2,4,4,4} float32\n"
              "outputs: %17\n");
    auto folded = g.compile(outs, unoptimized());
    EXPECT_EQ(plain->num_steps(), 3u);
    EXPECT_EQ(folded->num_steps(), 2u);

    auto xv = random_floats(2 * 3 * 36, rng);
    auto want = run1(*plain, xv);
    expect_near(run1(*folded, xv), want);
    expect_near(want, reference_eval(g, outs, {{x, xv}})[0]);
}

// F.batch_norm in eval mode is Elemwise arithmetic: (y - mean) * (rsqrt(var + eps) * scale) +
// shift, with the factors folded to constants; after a ConvBias (whose bias it absorbs too).
TEST(PassFoldBatchNorm, ElemwiseAffineStepsFoldIntoConvBias) {
    std::mt19937 rng(7);
    ComputingGraph g;
    const dnn::TensorShape ch{1, 4, 1, 1};
    auto* x = g.input("x", {2, 3, 6, 6}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(4 * 3 * 9, rng), {4, 3, 3, 3}), "w");
    auto* b = g.constant(tensor(random_floats(4, rng), ch), "b");
    auto* absent = g.constant(tensor({0}, {}));
    Bn bn = random_bn(rng);
    dnn::param::ConvBias cp;
    cp.padding = {1, 1};
    auto* c = g.insert1(ops::ConvBias(cp), {x, w, b, absent});
    auto* centred = g.insert1(elemwise(Mode::SUB), {c, g.constant(tensor(bn.mean, ch), "mean")});
    auto* scaled = g.insert1(elemwise(Mode::MUL), {g.constant(tensor(bn.scale, ch)), centred});
    auto* halved = g.insert1(elemwise(Mode::TRUE_DIV), {scaled, g.constant(tensor({2}, {1}))});
    auto* y = g.insert1(elemwise(Mode::ADD), {halved, g.constant(tensor(bn.shift, ch), "shift")});
    auto* z = g.insert1(elemwise(Mode::RELU), {y});  // not affine: stays
    std::vector<VarNode*> outs{z};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%1 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%2 'b' = const [-0.170228, -0.189602, -0.997146, 0.334522] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%3 = const [0] : {} float32 @cpu0\n"
              "%5 'mean' = const [0.910937, -0.0211543, 0.365828, 0.907983] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%7 = const [0.638394, 1.15925, 1.56409, 1.6726] : {1,4,1,1} float32 @cpu0\n"
              "%9 = const [2] : {1} float32 @cpu0\n"
              "%11 'shift' = const [0.0486912, 0.369258, 0.392321, 0.473349] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%4 = ConvBias(nonlineMode=IDENTITY, " GEOMETRY(1) ")(%0, %1, %2, %3) : {2,4,6,6} "
              "float32\n"
              "%6 = Elemwise(mode=SUB)(%4, %5) : {2,4,6,6} float32\n"
              "%8 = Elemwise(mode=MUL)(%7, %6) : {2,4,6,6} float32\n"
              "%10 = Elemwise(mode=TRUE_DIV)(%8, %9) : {2,4,6,6} float32\n"
              "%12 = Elemwise(mode=ADD)(%10, %11) : {2,4,6,6} float32\n"
              "%13 = Elemwise(mode=RELU)(%12) : {2,4,6,6} float32\n"
              "outputs: %13\n");
    auto plain = g.compile(outs, unoptimized());

    EXPECT_EQ(fold_batch_norm(g, outs), 1u);
    eliminate_dead_code(g, outs);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%3 = const [0] : {} float32 @cpu0\n"
              "%14 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%15 = const [-0.296413, 0.271621, -0.673587, -0.00623767] : {1,4,1,1} float32 "
              "@cpu0\n"
              "%16 = ConvBias(nonlineMode=IDENTITY, " GEOMETRY(1) ")(%0, %14, %15, %3) : {2,4,6,6} "
              "float32\n"
              "%13 = Elemwise(mode=RELU)(%16) : {2,4,6,6} float32\n"
              "outputs: %13\n");
    auto folded = g.compile(outs, unoptimized());
    EXPECT_EQ(plain->num_steps(), 6u);
    EXPECT_EQ(folded->num_steps(), 2u);

    auto xv = random_floats(2 * 3 * 36, rng);
    auto want = run1(*plain, xv);
    expect_near(run1(*folded, xv), want);
}

TEST(PassFoldBatchNorm, LeavesStepsThatAreNotPerChannelConstants) {
    ComputingGraph g;
    std::mt19937 rng(8);
    auto* x = g.input("x", {1, 2, 4, 4}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(2 * 2 * 9, rng), {2, 2, 3, 3}), "w");
    auto* win = g.input("w_in", {2, 2, 3, 3}, dnn::dtype::Float32, cpu());
    auto* s = g.input("s", {1, 2, 1, 1}, dnn::dtype::Float32, cpu());
    auto* row = g.constant(tensor({1, 2}, {2}), "row");  // broadcasts along the last axis
    auto* a = g.insert1(elemwise(Mode::MUL), {g.insert1(ops::ConvolutionForward(), {x, w}), s});
    auto* b = g.insert1(elemwise(Mode::MUL), {g.insert1(ops::ConvolutionForward(), {x, w}), row});
    auto* c = g.insert1(elemwise(Mode::MUL), {g.insert1(ops::ConvolutionForward(), {x, win}),
                                              g.constant(tensor({3}, {1}))});
    std::vector<VarNode*> outs{a, b, c};
    std::string before = g.dump(outs);
    EXPECT_EQ(fold_batch_norm(g, outs), 0u);
    EXPECT_EQ(g.dump(outs), before);
}
