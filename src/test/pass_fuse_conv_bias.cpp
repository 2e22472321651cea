// Convolution + bias + residual + activation into ConvBias: the graph before and after, and the
// fused graph's results against the unfused graph's.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

#define GEOMETRY(p) \
    "mode=CROSS_CORRELATION, stride=[1,1], padding=[" #p "," #p "], dilation=[1,1], group=1"
#define GEOMETRY0 GEOMETRY(0)
#define GEOMETRY1 GEOMETRY(1)
#define CONV0 "ConvolutionForward(" GEOMETRY0 ")"
#define CONV1 "ConvolutionForward(" GEOMETRY1 ")"

ops::ConvolutionForward conv(int32_t pad) {
    dnn::param::Convolution p;
    p.padding = {pad, pad};
    return ops::ConvolutionForward(p);
}

CompileOptions no_fusion() {
    CompileOptions o;
    o.fuse_conv_bias = o.fuse_elemwise = o.propagate_layouts = false;
    o.eliminate_common_subexpr = false;  // c1 and c4 are the same convolution
    return o;
}

}  // namespace

TEST(PassFuseConvBias, ConvBiasResidualAndActivationBecomeOneConvBias) {
    std::mt19937 rng(5);
    ComputingGraph g;
    auto* x = g.input("x", {2, 3, 6, 6}, dnn::dtype::Float32, cpu());
    auto* res = g.input("res", {2, 4, 6, 6}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(4 * 3 * 9, rng), {4, 3, 3, 3}), "w");
    auto* b = g.input("b", {1, 4, 1, 1}, dnn::dtype::Float32, cpu());
    auto* c1 = g.insert1(conv(1), {x, w});
    auto* biased = g.insert1(elemwise(Mode::ADD), {b, c1});  // either operand order
    auto* summed = g.insert1(elemwise(Mode::ADD), {biased, res});
    auto* y = g.insert1(elemwise(Mode::RELU), {summed});
    auto* c2 = g.insert1(conv(0), {x, w});  // no bias: an activation alone
    auto* s = g.insert1(elemwise(Mode::SIGMOID), {c2});
    auto* c3 = g.insert1(conv(0), {y, g.constant(tensor(random_floats(16, rng), {4, 4, 1, 1}))});
    auto* out3 = g.insert1(elemwise(Mode::ADD), {c3, b});  // c3 is an output itself: kept
    auto* c4 = g.insert1(conv(1), {x, w});
    auto* wide = g.input("wide", {1, 4, 6, 1}, dnn::dtype::Float32, cpu());
    auto* out4 = g.insert1(elemwise(Mode::ADD), {c4, wide});  // not a per-channel bias
    std::vector<VarNode*> outs{y, s, c3, out3, out4};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%1 'res' = input : {2,4,6,6} float32 @cpu0\n"
              "%2 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%3 'b' = input : {1,4,1,1} float32 @cpu0\n"
              "%10 = const : {4,4,1,1} float32 @cpu0\n"
              "%14 'wide' = input : {1,4,6,1} float32 @cpu0\n"
              "%4 = " CONV1
              "(%0, %2) : {2,4,6,6} float32\n"
              "%5 = Elemwise(mode=ADD)(%3, %4) : {2,4,6,6} float32\n"
              "%6 = Elemwise(mode=ADD)(%5, %1) : {2,4,6,6} float32\n"
              "%7 = Elemwise(mode=RELU)(%6) : {2,4,6,6} float32\n"
              "%8 = " CONV0
              "(%0, %2) : {2,4,4,4} float32\n"
              "%9 = Elemwise(mode=SIGMOID)(%8) : {2,4,4,4} float32\n"
              "%11 = " CONV0
              "(%7, %10) : {2,4,6,6} float32\n"
              "%12 = Elemwise(mode=ADD)(%11, %3) : {2,4,6,6} float32\n"
              "%13 = " CONV1
              "(%0, %2) : {2,4,6,6} float32\n"
              "%15 = Elemwise(mode=ADD)(%13, %14) : {2,4,6,6} float32\n"
              "outputs: %7 %9 %11 %12 %15\n");
    auto plain = g.compile(outs, no_fusion());
    EXPECT_EQ(plain->num_steps(), 10u);

    // c3 is an output and c4's ADD is neither a per-channel bias nor a residual of its shape:
    // both stay convolutions.
    EXPECT_EQ(fuse_conv_bias(g, outs), 2u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,6,6} float32 @cpu0\n"
              "%1 'res' = input : {2,4,6,6} float32 @cpu0\n"
              "%2 'w' = const : {4,3,3,3} float32 @cpu0\n"
              "%3 'b' = input : {1,4,1,1} float32 @cpu0\n"
              "%10 = const : {4,4,1,1} float32 @cpu0\n"
              "%14 'wide' = input : {1,4,6,1} float32 @cpu0\n"
              "%17 = const [0] : {} float32 @cpu0\n"
              "%18 = const [0] : {} float32 @cpu0\n"
              "%13 = " CONV1
              "(%0, %2) : {2,4,6,6} float32\n"
              "%15 = Elemwise(mode=ADD)(%13, %14) : {2,4,6,6} float32\n"
              "%16 = ConvBias(nonlineMode=RELU, " GEOMETRY1
              ")(%0, %2, %3, %1) : {2,4,6,6} float32\n"
              "%11 = " CONV0
              "(%16, %10) : {2,4,6,6} float32\n"
              "%12 = Elemwise(mode=ADD)(%11, %3) : {2,4,6,6} float32\n"
              "%19 = ConvBias(nonlineMode=SIGMOID, " GEOMETRY0
              ")(%0, %2, %17, %18) : {2,4,4,4} "
              "float32\n"
              "outputs: %16 %19 %11 %12 %15\n");
    eliminate_dead_code(g, outs);
    auto fused = g.compile(outs, no_fusion());
    EXPECT_EQ(fused->num_steps(), 6u);

    auto xv = random_floats(2 * 3 * 36, rng), rv = random_floats(2 * 4 * 36, rng),
         bv = random_floats(4, rng), wv = random_floats(24, rng);
    for (auto* exe : {plain.get(), fused.get()}) {
        exe->set_input("x", tensor(xv, {2, 3, 6, 6}));
        exe->set_input("res", tensor(rv, {2, 4, 6, 6}));
        exe->set_input("b", tensor(bv, {1, 4, 1, 1}));
        exe->set_input("wide", tensor(wv, {1, 4, 6, 1}));
        exe->execute();
    }
    for (size_t i = 0; i < outs.size(); ++i) {
        SCOPED_TRACE(i);
        expect_near(floats(fused->output(i)), floats(plain->output(i)));
    }
    auto ref = reference_eval(g, outs, {{x, xv}, {res, rv}, {b, bv}, {wide, wv}});
    for (size_t i = 0; i < outs.size(); ++i)
        expect_near(floats(fused->output(i)), ref[i]);
}

// compile() fuses only where ConvBias has a kernel of its own (the naive backend has every op's;
// x86 falls back to naive for ops it lacks, slower than its convolution and Elemwise).
TEST(PassFuseConvBias, CompileFusesWhereTheBackendHasAConvBiasKernel) {
    for (CompNode cn : {cpu(), naive_cpu()}) {
        ComputingGraph g;
        auto* x = g.input("x", {1, 2, 5, 5}, dnn::dtype::Float32, cn);
        auto* w = g.input("w", {3, 2, 3, 3}, dnn::dtype::Float32, cn);
        auto* y = g.insert1(elemwise(Mode::RELU), {g.insert1(conv(1), {x, w})});
        auto exe = g.compile({y});
        bool own = cn.dnn_handle()->has_own_kernel(dnn::ConvBias::kType);
        EXPECT_EQ(exe->dump().find("ConvBias") != std::string::npos, own) << exe->dump();
        EXPECT_EQ(exe->num_steps(), own ? 1u : 2u);
    }
    EXPECT_TRUE(naive_cpu().dnn_handle()->has_own_kernel(dnn::ConvBias::kType));
}
