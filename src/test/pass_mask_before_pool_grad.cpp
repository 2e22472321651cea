// A max pooling's backward masked by its own src (ReLU's backward after the relu-mask pass):
// the mask moves onto the pooled gradient. The graph before and after, results bit for bit the
// unrewritten graph's (NaNs, zeros, ties and all-negative windows included) and the naive
// reference's, 2x2 windows and overlapping padded ones; the cases left alone.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/pooling.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

using PMode = dnn::param::Pooling::Mode;

dnn::param::Pooling pooling(PMode mode, int32_t window, int32_t stride, int32_t pad) {
    dnn::param::Pooling p;
    p.mode = mode;
    p.window = {window, window};
    p.stride = {stride, stride};
    p.padding = {pad, pad};
    return p;
}

CompileOptions options(bool move) {
    CompileOptions o;
    o.mask_before_pool_grads = move;
    return o;
}

std::vector<std::vector<float>> run(ComputingGraph& g, const std::vector<VarNode*>& outs,
                                    const CompileOptions& o, const std::vector<float>& xv,
                                    const std::vector<float>& dyv) {
    auto exe = g.compile(outs, o);
    exe->set_input("x", tensor(xv, outs[0]->owner()->inputs()[0]->shape()));
    exe->set_input("dy", tensor(dyv, outs[0]->shape()));
    exe->execute();
    std::vector<std::vector<float>> r;
    for (size_t i = 0; i < outs.size(); ++i)
        r.push_back(floats(exe->output(i)));
    return r;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
                << "element " << i << ": " << a[i] << " vs " << b[i];
}

// relu -> max pool, and the relu's backward after the pooling's: outputs {pooled, masked grad}.
struct Net {
    ComputingGraph g;
    VarNode *x, *dy, *r, *p, *grad, *masked;
    Net(const dnn::TensorShape& xs, const dnn::param::Pooling& pp) {
        x = g.input("x", xs, dnn::dtype::Float32, cpu());
        r = g.insert1(elemwise(Mode::RELU), {x});
        p = g.insert1(ops::PoolingForward(pp), {r});
        dy = g.input("dy", p->shape(), dnn::dtype::Float32, cpu());
        grad = g.insert1(ops::PoolingBackward(pp), {r, p, dy});
        masked = g.insert1(elemwise(Mode::SWITCH_GT0), {r, grad});
    }
};

}  // namespace

TEST(PassMaskBeforePoolGrad, TheMaskSweepsThePooledGradient) {
    Net n({1, 2, 4, 4}, pooling(PMode::MAX, 2, 2, 0));
    std::vector<VarNode*> outs{n.p, n.masked};
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    // Windows (row-major, 2x2 each): a positive maximum; all negative (relu: all zeros, the
    // gradient lands on a zero); a tie of positive maxima (the first gets it); a NaN (the
    // window's maximum, masked off); -0 and +0 only; a tiny positive; +inf; mixed.
    std::vector<float> xv{1,    -2,    -1,     -3,    //
                          0.5f, 0.25f, -4,     -0.f,  //
                          2,    2,     nan,    5,     //
                          -1,   2,     1,      -7,    //
                          -0.f, 0,     1e-30f, -1,    //
                          0,    -0.f,  -2,     -3,    //
                          inf,  1,     -1,     4,     //
                          3,    -5,    2,      -6};
    std::vector<float> dyv{1, 2, 3, 4, 5, nan, -inf, 8};
    auto before = run(n.g, outs, options(false), xv, dyv);
    EXPECT_EQ(n.g.dump(outs),
              "%0 'x' = input : {1,2,4,4} float32 @cpu0\n"
              "%3 'dy' = input : {1,2,2,2} float32 @cpu0\n"
              "%1 = Elemwise(mode=RELU)(%0) : {1,2,4,4} float32\n"
              "%2 = PoolingForward(mode=MAX, window=[2,2], stride=[2,2], padding=[0,0])(%1) : "
              "{1,2,2,2} float32\n"
              "%4 = PoolingBackward(mode=MAX, window=[2,2], stride=[2,2], padding=[0,0])(%1, "
              "%2, %3) : {1,2,4,4} float32\n"
              "%5 = Elemwise(mode=SWITCH_GT0)(%1, %4) : {1,2,4,4} float32\n"
              "outputs: %2 %5\n");
    EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 1u);
    EXPECT_EQ(n.g.dump(outs),
              "%0 'x' = input : {1,2,4,4} float32 @cpu0\n"
              "%3 'dy' = input : {1,2,2,2} float32 @cpu0\n"
              "%1 = Elemwise(mode=RELU)(%0) : {1,2,4,4} float32\n"
              "%2 = PoolingForward(mode=MAX, window=[2,2], stride=[2,2], padding=[0,0])(%1) : "
              "{1,2,2,2} float32\n"
              "%6 = Elemwise(mode=SWITCH_GT0)(%2, %3) : {1,2,2,2} float32\n"
              "%7 = PoolingBackward(mode=MAX, window=[2,2], stride=[2,2], padding=[0,0])(%1, "
              "%2, %6) : {1,2,4,4} float32\n"
              "outputs: %2 %7\n");
    EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 0u);  // nothing left to move
    auto after = run(n.g, outs, options(false), xv, dyv);
    expect_same_bits(after[1], before[1]);
    expect_same_bits(after[1], reference_eval(n.g, outs, {{n.x, xv}, {n.dy, dyv}})[1]);
    // By hand (relu(NaN)'s value aside: channel 0's last window): channel 0 puts 1 on x = 1,
    // nothing on the all-negative window, 3 on the first of the tied 2s; channel 1 nothing on
    // the zeros, dy = NaN on 1e-30 (positive: kept), -inf on +inf, 8 on 4.
    const auto& got = after[1];
    const std::map<size_t, float> hand{{0, 1.f}, {8, 3.f}, {16 + 8, -inf}, {16 + 11, 8.f}};
    for (size_t i = 0; i < 32; ++i) {
        if (i == 10 || i == 11 || i == 14 || i == 15)
            continue;
        if (i == 16 + 2) {
            EXPECT_TRUE(std::isnan(got[i])) << got[i];
            continue;
        }
        auto it = hand.find(i);
        EXPECT_EQ(got[i], it == hand.end() ? 0.f : it->second) << "element " << i;
    }
}

// Overlapping padded windows (3x3, stride 2, padding 1): an element that is the maximum of
// several windows sums their gradients, masked alike; through compile's passes, blocked layouts
// and fusion included.
TEST(PassMaskBeforePoolGrad, OverlappingWindowsSumTheSameTerms) {
    Net n({2, 3, 9, 9}, pooling(PMode::MAX, 3, 2, 1));
    std::vector<VarNode*> outs{n.p, n.masked};
    std::mt19937 rng(17);
    auto xv = random_floats(2 * 3 * 81, rng), dyv = random_floats(2 * 3 * 25, rng);
    auto before = run(n.g, outs, options(false), xv, dyv);
    auto after = run(n.g, outs, options(true), xv, dyv);
    expect_same_bits(after[1], before[1]);
    auto want = reference_eval(n.g, outs, {{n.x, xv}, {n.dy, dyv}});
    expect_same_bits(after[1], want[1]);
    EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 1u);
}

// Left alone: average pooling; a mask by another var; a gradient something else reads too; a
// dst that is not the forward of the backward's src (the backward only checks its shape).
TEST(PassMaskBeforePoolGrad, OtherShapesOfTheGraphStay) {
    {
        Net n({1, 2, 4, 4}, pooling(PMode::AVERAGE, 2, 2, 0));
        std::vector<VarNode*> outs{n.p, n.masked};
        EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 0u);
    }
    {
        Net n({1, 2, 4, 4}, pooling(PMode::MAX, 2, 2, 0));
        auto* other = n.g.insert1(elemwise(Mode::SWITCH_GT0), {n.x, n.grad});
        std::vector<VarNode*> outs{n.p, other};
        EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 0u);
    }
    {
        Net n({1, 2, 4, 4}, pooling(PMode::MAX, 2, 2, 0));
        auto* twice = n.g.insert1(elemwise(Mode::ADD), {n.grad, n.grad});
        std::vector<VarNode*> outs{n.masked, twice};
        EXPECT_EQ(mask_before_max_pool_grads(n.g, outs), 0u);
        std::vector<VarNode*> exported{n.masked, n.grad};
        EXPECT_EQ(mask_before_max_pool_grads(n.g, exported), 0u);
    }
    {
        ComputingGraph g;
        auto pp = pooling(PMode::MAX, 2, 2, 0);
        auto* r = g.insert1(elemwise(Mode::RELU),
                            {g.input("x", {1, 2, 4, 4}, dnn::dtype::Float32, cpu())});
        auto* y = g.input("y", {1, 2, 2, 2}, dnn::dtype::Float32, cpu());
        auto* dy = g.input("dy", {1, 2, 2, 2}, dnn::dtype::Float32, cpu());
        auto* masked = g.insert1(elemwise(Mode::SWITCH_GT0),
                                 {r, g.insert1(ops::PoolingBackward(pp), {r, y, dy})});
        std::vector<VarNode*> outs{masked};
        EXPECT_EQ(mask_before_max_pool_grads(g, outs), 0u);
    }
}
