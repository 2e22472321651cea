// Layout propagation (propagate_channel_blocked): a conv -> relu -> conv -> pool -> add chain
// before and after the pass, with conversions only at its edges (the graph's input and outputs,
// and a reader that needs plain NCHW), and its results against the unoptimised graph's. Blocks of
// 8 and 16 are asked for explicitly, so the test does not depend on what this CPU's oneDNN
// prefers; channel counts that fill their last block and that do not, batch 1, odd sizes.
#include <limits>
#include <regex>

#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/pooling.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

ops::ConvolutionForward conv(int32_t pad) {
    dnn::param::Convolution p;
    p.padding = {pad, pad};
    return ops::ConvolutionForward(p);
}

ops::PoolingForward pool(dnn::param::Pooling::Mode mode) {
    dnn::param::Pooling p;
    p.mode = mode;
    p.window = {3, 3};
    p.stride = {2, 2};
    p.padding = {1, 1};
    return ops::PoolingForward(p);
}

// x -> conv (3 -> C) -> relu -> conv (C -> C) -> max pool -> add (average pool of the relu) -> y,
// and sigmoid(relu) -> s, which needs the plain value.
struct Chain {
    ComputingGraph g;
    VarNode* x;
    std::vector<VarNode*> outs;
    std::vector<float> x_value;

    Chain(size_t c, size_t h, size_t w, std::mt19937& rng, CompNode cn = cpu()) {
        x = g.input("x", {1, 3, h, w}, dnn::dtype::Float32, cn);
        auto* w1 = g.constant(tensor(random_floats(c * 3 * 9, rng), {c, 3, 3, 3}, cn), "w1");
        auto* w2 = g.constant(tensor(random_floats(c * c * 9, rng), {c, c, 3, 3}, cn), "w2");
        auto* c1 = g.insert1(conv(1), {x, w1});
        auto* r = g.insert1(elemwise(Mode::RELU), {c1});
        auto* c2 = g.insert1(conv(1), {r, w2});
        auto* p = g.insert1(pool(dnn::param::Pooling::Mode::MAX), {c2});
        auto* q = g.insert1(pool(dnn::param::Pooling::Mode::AVERAGE), {r});
        auto* y = g.insert1(elemwise(Mode::ADD), {p, q});
        y->set_name("y");
        auto* s = g.insert1(elemwise(Mode::SIGMOID), {r});
        s->set_name("s");
        outs = {y, s};
        x_value = random_floats(3 * h * w, rng);
    }

    std::vector<std::vector<float>> run(const Executable& exe_const) {
        auto& exe = const_cast<Executable&>(exe_const);
        exe.set_input("x", tensor(x_value, x->shape(), x->comp_node()));
        exe.execute();
        return {floats(exe.output(0)), floats(exe.output(1))};
    }
};

CompileOptions unoptimised() {
    CompileOptions o;
    o.fold_constants = o.eliminate_common_subexpr = o.fuse_conv_bias = o.fuse_elemwise = false;
    o.propagate_layouts = o.reuse_inplace = false;
    return o;
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

#define GEOMETRY "mode=CROSS_CORRELATION, stride=[1,1], padding=[1,1], dilation=[1,1], group=1"
#define POOL(mode) "(mode=" mode ", window=[3,3], stride=[2,2], padding=[1,1])"

}  // namespace

TEST(PassChannelBlocked, ChainRunsBlockedWithConversionsOnlyAtItsEdges) {
    std::mt19937 rng(3);
    for (size_t block : {8, 16}) {
        Chain ch(20, 7, 9, rng);
        EXPECT_EQ(ch.g.dump(ch.outs),
                  "%0 'x' = input : {1,3,7,9} float32 @cpu0\n"
                  "%1 'w1' = const : {20,3,3,3} float32 @cpu0\n"
                  "%2 'w2' = const : {20,20,3,3} float32 @cpu0\n"
                  "%3 = ConvolutionForward(" GEOMETRY ")(%0, %1) : {1,20,7,9} float32\n"
                  "%4 = Elemwise(mode=RELU)(%3) : {1,20,7,9} float32\n"
                  "%5 = ConvolutionForward(" GEOMETRY ")(%4, %2) : {1,20,7,9} float32\n"
                  "%6 = PoolingForward" POOL("MAX") "(%5) : {1,20,4,5} float32\n"
                  "%7 = PoolingForward" POOL("AVERAGE") "(%4) : {1,20,4,5} float32\n"
                  "%8 'y' = Elemwise(mode=ADD)(%6, %7) : {1,20,4,5} float32\n"
                  "%9 's' = Elemwise(mode=SIGMOID)(%4) : {1,20,7,9} float32\n"
                  "outputs: %8 %9\n");

        EXPECT_EQ(propagate_channel_blocked(ch.g, ch.outs, block), 6u);
        const std::string b = std::to_string(block), cb = block == 8 ? "3" : "2";
        const std::string blocked_conv =
                "ConvBiasBlocked(nonlineMode=IDENTITY, " GEOMETRY ", block=" + b +
                ", filter_is_const=true)";
        // The first convolution reads the plain input; the relu's value leaves the chain once,
        // for the sigmoid; y leaves it at the end. No other conversion. Each new node runs where
        // the node it replaced ran, so the sigmoid stays last.
        EXPECT_EQ(ch.g.dump(ch.outs),
                  "%0 'x' = input : {1,3,7,9} float32 @cpu0\n"
                  "%1 'w1' = const : {20,3,3,3} float32 @cpu0\n"
                  "%2 'w2' = const : {20,20,3,3} float32 @cpu0\n"
                  "%10 = const [0] : {} float32 @cpu0\n"
                  "%11 = const [0] : {} float32 @cpu0\n"
                  "%15 = const [0] : {} float32 @cpu0\n"
                  "%16 = const [0] : {} float32 @cpu0\n"
                  "%12 = " +
                          blocked_conv + "(%0, %1, %10, %11) : {1," + cb + ",7,9," + b +
                          "} float32\n"
                          "%13 = Elemwise(mode=RELU)(%12) : {1," +
                          cb + ",7,9," + b +
                          "} float32\n"
                          "%14 = ChannelUnblock(channels=20)(%13) : {1,20,7,9} float32\n"
                          "%17 = " +
                          blocked_conv + "(%13, %2, %15, %16) : {1," + cb + ",7,9," + b +
                          "} float32\n"
                          "%18 = PoolingBlocked" POOL("MAX") "(%17) : {1," +
                          cb + ",4,5," + b +
                          "} float32\n"
                          "%19 = PoolingBlocked" POOL("AVERAGE") "(%13) : {1," +
                          cb + ",4,5," + b +
                          "} float32\n"
                          "%20 = Elemwise(mode=ADD)(%18, %19) : {1," +
                          cb + ",4,5," + b +
                          "} float32\n"
                          "%21 'y' = ChannelUnblock(channels=20)(%20) : {1,20,4,5} float32\n"
                          "%9 's' = Elemwise(mode=SIGMOID)(%14) : {1,20,7,9} float32\n"
                          "outputs: %21 %9\n");
    }
}

TEST(PassChannelBlocked, ResultsMatchTheUnoptimisedGraph) {
    std::mt19937 rng(7);
    for (size_t block : {8, 16})
        for (size_t c : {5, 16, 20, 32})
            for (auto [h, w] : {std::pair<size_t, size_t>{7, 9}, {1, 1}, {12, 5}}) {
                Chain ch(c, h, w, rng);
                auto want = reference_eval(ch.g, ch.outs, {{ch.x, ch.x_value}});
                auto plain = ch.run(*ch.g.compile(ch.outs, unoptimised()));
                propagate_channel_blocked(ch.g, ch.outs, block);
                CompileOptions o;  // every other pass too, but no second propagation
                o.propagate_layouts = false;
                auto exe = ch.g.compile(ch.outs, o);
                ASSERT_EQ(count(exe->dump(), "ChannelBlock("), 0u) << exe->dump();
                ASSERT_EQ(count(exe->dump(), "ChannelUnblock("), 2u) << exe->dump();
                auto got = ch.run(*exe);
                for (size_t i = 0; i < 2; ++i) {
                    SCOPED_TRACE(testing::Message() << "block " << block << ", C " << c << ", " << h
                                                    << "x" << w << ", output " << i);
                    expect_near(got[i], want[i]);
                    expect_near(plain[i], want[i]);
                    // Run again: the converted filters are reused.
                    expect_near(ch.run(*exe)[i], want[i]);
                }
            }
}

// compile() asks the backend: on x86 with AVX2 or AVX-512 the chain runs blocked (in whichever
// block this CPU's oneDNN prefers), on the naive backend nothing changes; the results agree.
TEST(PassChannelBlocked, CompileAsksTheBackend) {
    std::mt19937 rng(11);
    Chain on_cpu(20, 7, 9, rng);
    const size_t block = cpu().dnn_handle()->preferred_channel_block();
    auto exe = on_cpu.g.compile(on_cpu.outs);
    const std::string d = exe->dump();
    if (block == 0) {
        EXPECT_EQ(count(d, "Blocked("), 0u) << d;
    } else {
        EXPECT_TRUE(block == 8 || block == 16) << block;
        EXPECT_EQ(count(d, "ConvBiasBlocked("), 2u) << d;
        EXPECT_EQ(count(d, "PoolingBlocked("), 2u) << d;
        EXPECT_EQ(count(d, "ChannelUnblock("), 2u) << d;
        EXPECT_EQ(count(d, "ChannelBlock("), 0u) << d;
    }
    CompileOptions off;
    off.propagate_layouts = false;
    auto plain = on_cpu.g.compile(on_cpu.outs, off);
    EXPECT_EQ(count(plain->dump(), "Blocked("), 0u);
    auto got = on_cpu.run(*exe), want = on_cpu.run(*plain);
    for (size_t i = 0; i < 2; ++i)
        expect_near(got[i], want[i]);

    std::mt19937 rng2(11);
    Chain on_naive(20, 7, 9, rng2, naive_cpu());
    EXPECT_EQ(naive_cpu().dnn_handle()->preferred_channel_block(), 0u);
    EXPECT_EQ(count(on_naive.g.compile(on_naive.outs)->dump(), "Blocked("), 0u);
}

// What stays plain: a convolution whose plain src no member reads, a grouped convolution, an
// elementwise mode that does not keep zeros, an ADD of a scalar (the padding would become it), a
// MUL by a constant that is not finite (0 * inf is NaN); a plain operand of a member
// elementwise op gets one ChannelBlock, shared by its readers.
TEST(PassChannelBlocked, OnlyChainsRunBlocked) {
    std::mt19937 rng(13);
    ComputingGraph g;
    auto* x = g.input("x", {1, 8, 5, 5}, dnn::dtype::Float32, cpu());
    auto* res = g.input("res", {1, 8, 5, 5}, dnn::dtype::Float32, cpu());
    auto* bias = g.input("bias", {1, 1, 1, 1}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(random_floats(8 * 8 * 9, rng), {8, 8, 3, 3}), "w");
    auto* wi = g.input("wi", {8, 8, 3, 3}, dnn::dtype::Float32, cpu());
    auto* lone = g.insert1(conv(1), {x, w});  // read only by the output: stays
    auto* c1 = g.insert1(conv(1), {x, wi});   // a filter that is no constant
    auto* a1 = g.insert1(elemwise(Mode::ADD), {c1, res});
    auto* a2 = g.insert1(elemwise(Mode::MUL), {a1, res});
    auto* e = g.insert1(elemwise(Mode::EXP), {a2});         // not zero-preserving
    auto* bc = g.insert1(elemwise(Mode::ADD), {a2, bias});  // a scalar ADD
    dnn::param::Convolution gp;
    gp.padding = {1, 1};
    gp.group = 2;
    auto* wg = g.constant(tensor(random_floats(8 * 4 * 9, rng), {8, 4, 3, 3}), "wg");
    auto* grouped = g.insert1(ops::ConvolutionForward(gp), {a2, wg});
    std::vector<VarNode*> outs{lone, e, bc, grouped};
    std::map<const VarNode*, std::vector<float>> in{{x, random_floats(200, rng)},
                                                    {res, random_floats(200, rng)},
                                                    {bias, random_floats(1, rng)},
                                                    {wi, random_floats(8 * 8 * 9, rng)}};
    auto want = reference_eval(g, outs, in);
    EXPECT_EQ(propagate_channel_blocked(g, outs, 8), 3u);
    const std::string d = g.dump(outs);
    EXPECT_EQ(count(d, "ConvBiasBlocked("), 1u) << d;
    EXPECT_EQ(count(d, "filter_is_const=false"), 1u) << d;
    EXPECT_EQ(count(d, "ChannelBlock(block=8)(%1)"), 1u) << d;  // res, once for both readers
    EXPECT_EQ(count(d, "ChannelUnblock("), 1u) << d;            // a2, for its three readers
    EXPECT_EQ(count(d, "= ConvolutionForward("), 2u) << d;      // lone and grouped
    expect_compiled_near(g, outs, in, want);

    // conv -> relu -> MUL by inf: the MUL reads the relu's plain value (its result, inf or NaN, is
    // not compared).
    ComputingGraph g2;
    auto* x2 = g2.input("x", {1, 8, 5, 5}, dnn::dtype::Float32, cpu());
    auto* w2 = g2.input("w", {8, 8, 3, 3}, dnn::dtype::Float32, cpu());
    const float inf = std::numeric_limits<float>::infinity();
    auto* huge = g2.constant(tensor({inf}, {1, 1, 1, 1}), "inf");
    auto* r2 = g2.insert1(elemwise(Mode::RELU), {g2.insert1(conv(1), {x2, w2})});
    std::vector<VarNode*> outs2{g2.insert1(elemwise(Mode::MUL), {r2, huge})};
    EXPECT_EQ(propagate_channel_blocked(g2, outs2, 8), 2u);  // the convolution and the relu
    const std::string d2 = g2.dump(outs2);
    EXPECT_EQ(count(d2, "ChannelUnblock("), 1u) << d2;      // the relu's value, for the MUL
    EXPECT_EQ(count(d2, ": {1,8,5,5} float32"), 3u) << d2;  // x, the unblocked relu, the MUL
}

// Broadcast operands inside a chain: a per-channel (1, C, 1, 1) scale (an input) and shift (a
// constant) are blocked once each (zeros past C), a finite scalar factor broadcasts as it is, and
// the chain conv -> *scale -> +shift -> *0.5 -> relu -> conv runs blocked from end to end, with
// the unoptimised graph's results.
TEST(PassChannelBlocked, BroadcastOperandsStayInTheChain) {
    std::mt19937 rng(37);
    for (size_t block : {8, 16})
        for (size_t c : {16, 20}) {
            SCOPED_TRACE(testing::Message() << "block " << block << ", C " << c);
            ComputingGraph g;
            auto* x = g.input("x", {2, 3, 6, 7}, dnn::dtype::Float32, cpu());
            auto* scale = g.input("scale", {1, c, 1, 1}, dnn::dtype::Float32, cpu());
            auto* w1 = g.constant(tensor(random_floats(c * 3 * 9, rng), {c, 3, 3, 3}), "w1");
            auto* w2 = g.constant(tensor(random_floats(c * c * 9, rng), {c, c, 3, 3}), "w2");
            auto* shift = g.constant(tensor(random_floats(c, rng), {1, c, 1, 1}), "shift");
            auto* half = g.constant(tensor({0.5f}, {1, 1, 1, 1}), "half");
            auto* c1 = g.insert1(conv(1), {x, w1});
            auto* m = g.insert1(elemwise(Mode::MUL), {c1, scale});
            auto* a = g.insert1(elemwise(Mode::ADD), {shift, m});
            auto* h = g.insert1(elemwise(Mode::MUL), {a, half});
            auto* r = g.insert1(elemwise(Mode::RELU), {h});
            auto* y = g.insert1(conv(1), {r, w2});
            std::vector<VarNode*> outs{y};
            std::map<const VarNode*, std::vector<float>> in{{x, random_floats(2 * 3 * 6 * 7, rng)},
                                                            {scale, random_floats(c, rng)}};
            auto want = reference_eval(g, outs, in);
            const std::string before = g.dump(outs);
            EXPECT_EQ(count(before, "= ConvolutionForward("), 2u) << before;
            EXPECT_EQ(count(before, "Blocked("), 0u) << before;

            EXPECT_EQ(propagate_channel_blocked(g, outs, block), 6u);
            const std::string after = g.dump(outs);
            EXPECT_EQ(count(after, "= ConvBiasBlocked("), 2u) << after;
            EXPECT_EQ(count(after, "= ConvolutionForward("), 0u) << after;
            // scale and shift in, y out; the scalar read as it is.
            EXPECT_EQ(count(after, "ChannelBlock("), 2u) << after;
            EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
            const std::string blocked_pc = "{1," + std::to_string((c + block - 1) / block) +
                                           ",1,1," + std::to_string(block) + "}";
            EXPECT_EQ(count(after, blocked_pc), 2u) << after;
            EXPECT_EQ(count(after, "Elemwise(mode=MUL)(%"), 2u) << after;
            expect_compiled_near(g, outs, in, want);
        }
}
