// Layout propagation through 1-D and 3-D poolings (oneDNN's pooling on nCw16c / nCdhw16c):
// conv -> relu -> max pool -> conv -> average pool runs blocked from the first convolution to the
// result, with one conversion out; the results equal the unoptimised graph's.
#include "graph_test_util.h"
#include "neomeg/graph/passes.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/pooling.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

}  // namespace

TEST(PassChannelBlocked, OneAndThreeDimensionalPoolingsStayInTheChain) {
    std::mt19937 rng(53);
    using PoolMode = dnn::param::Pooling::Mode;
    for (size_t spatial : {1, 3})
        for (size_t block : {8, 16}) {
            SCOPED_TRACE(testing::Message() << spatial << "-D, block " << block);
            const size_t c = 20;
            dnn::TensorShape img{2, 3}, k1{c, 3}, k2{c, c};
            const size_t sizes[] = {6, 5, 9};
            for (size_t d = 0; d < spatial; ++d) {
                img[2 + d] = sizes[3 - spatial + d];
                k1[2 + d] = k2[2 + d] = 3;
            }
            img.ndim = k1.ndim = k2.ndim = 2 + spatial;
            dnn::param::Convolution cp;
            cp.stride = cp.dilation = std::vector<int32_t>(spatial, 1);
            cp.padding = std::vector<int32_t>(spatial, 1);
            auto pool = [&](PoolMode mode, int32_t pad) {
                dnn::param::Pooling pp;
                pp.mode = mode;
                pp.window = std::vector<int32_t>(spatial, 2);
                pp.stride = std::vector<int32_t>(spatial, 2);
                pp.padding = std::vector<int32_t>(spatial, pad);
                return ops::PoolingForward(pp);
            };
            ComputingGraph g;
            auto* x = g.input("x", img, dnn::dtype::Float32, cpu());
            auto* w1 = g.input("w1", k1, dnn::dtype::Float32, cpu());
            auto* w2 = g.input("w2", k2, dnn::dtype::Float32, cpu());
            std::map<const VarNode*, std::vector<float>> in;
            for (VarNode* v : {x, w1, w2})
                in[v] = random_floats(v->shape().total_nr_elems(), rng);
            auto* r = g.insert1(elemwise(Mode::RELU),
                                {g.insert1(ops::ConvolutionForward(cp), {x, w1})});
            auto* p = g.insert1(pool(PoolMode::MAX, 0), {r});
            auto* c2 = g.insert1(ops::ConvolutionForward(cp), {p, w2});
            auto* y = g.insert1(pool(PoolMode::AVERAGE_COUNT_EXCLUDE_PADDING, 1), {c2});
            y->set_name("y");
            std::vector<VarNode*> outs{y};
            auto want = reference_eval(g, outs, in);

            // 2 convolutions, the relu, 2 poolings.
            EXPECT_EQ(propagate_channel_blocked(g, outs, block), 5u);
            const std::string after = g.dump(outs);
            EXPECT_EQ(count(after, "= PoolingBlocked"), 2u) << after;
            EXPECT_EQ(count(after, "= PoolingForward"), 0u) << after;
            EXPECT_EQ(count(after, "ChannelBlock("), 0u) << after;
            EXPECT_EQ(count(after, "ChannelUnblock("), 1u) << after;
            expect_compiled_near(g, outs, in, want, 1e-4f);
        }
}
