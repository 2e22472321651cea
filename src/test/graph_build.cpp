// Building a ComputingGraph: layout inference at insert, clear errors for bad graphs, rewrites,
// topological order and the text dump.
#include <string>

#include "graph_test_util.h"
#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

template <class Err, class Fn>
std::string error_of(Fn&& fn) {
    try {
        fn();
    } catch (const Err& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

void expect_contains(const std::string& s, const std::string& part) {
    EXPECT_NE(s.find(part), std::string::npos) << "'" << part << "' not in: " << s;
}

}  // namespace

TEST(GraphBuild, InfersStaticLayoutsAtInsert) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 8}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(std::vector<float>(8 * 3, 0.5f), {8, 3}), "w");
    auto* y = g.insert1(ops::MatrixMul(), {x, w});
    EXPECT_EQ(y->shape().to_string(), "{4,3}");
    EXPECT_EQ(y->dtype(), dnn::dtype::Float32);
    EXPECT_TRUE(y->layout().is_contiguous());
    EXPECT_EQ(y->kind(), VarNode::Kind::Computed);
    EXPECT_EQ(y->owner()->op().to_string(), ops::MatrixMul().to_string());
    EXPECT_EQ(y->comp_node(), cpu());
    auto* s = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 1), {y});
    EXPECT_EQ(s->shape().to_string(), "{4,1}");
    auto* r = g.insert1(reshape({-1}), {s});
    EXPECT_EQ(r->shape().to_string(), "{4}");
    // a dimshuffle of a contiguous var is a contiguous var of the permuted shape
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    auto* t = g.insert1(ops::Dimshuffle(dp), {y});
    EXPECT_EQ(t->shape().to_string(), "{3,4}");
    EXPECT_TRUE(t->layout().is_contiguous());
    // readers are tracked per input slot
    auto* sq = g.insert1(elemwise(Mode::MUL), {y, y});
    ASSERT_EQ(y->users().size(), 4u);  // reduce, dimshuffle, mul twice
    EXPECT_EQ(y->users()[2], sq->owner());
    EXPECT_EQ(y->users()[3], sq->owner());
}

TEST(GraphBuild, MultiOutputAndGeneratorOps) {
    ComputingGraph g;
    auto* x = g.input("x", {6, 2}, dnn::dtype::Float32, cpu());
    dnn::param::Split sp;
    sp.sizes = {1, 2, 3};
    const auto& parts = g.insert(ops::Split(sp), {x});
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[2]->shape().to_string(), "{3,2}");
    EXPECT_EQ(parts[2]->owner_index(), 2u);
    EXPECT_THROW(g.insert1(ops::Split(sp), {x}), dnn::ParamError);  // three outputs

    InsertOptions opt;
    opt.output_shapes = {{2, 3}};
    opt.comp_node = cpu();
    auto* f = g.insert1(ops::Fill(), {}, opt);
    EXPECT_EQ(f->shape().to_string(), "{2,3}");
    // a generator needs a comp node and its output shape
    expect_contains(error_of<dnn::ParamError>([&] { g.insert1(ops::Fill(), {}); }),
                    "needs InsertOptions::comp_node");
    InsertOptions two_shapes = opt;
    two_shapes.output_shapes = {{1}, {2}};
    expect_contains(error_of<dnn::ParamError>([&] { g.insert1(ops::Fill(), {}, two_shapes); }),
                    "1 output shapes needed, got 2");
}

TEST(GraphBuild, ShapeErrorsNameTheOpItsParamsAndTheInputShapes) {
    ComputingGraph g;
    auto* a = g.input("a", {2, 3}, dnn::dtype::Float32, cpu());
    auto* b = g.input("b", {4}, dnn::dtype::Float32, cpu());
    auto msg = error_of<dnn::ShapeError>([&] { g.insert1(elemwise(Mode::ADD), {a, b}); });
    expect_contains(msg, "Elemwise(mode=ADD)");
    expect_contains(msg, "%0 'a' {2,3} float32");
    expect_contains(msg, "%1 'b' {4} float32");

    auto* m = g.input("m", {3, 5}, dnn::dtype::Float32, cpu());
    msg = error_of<dnn::ShapeError>([&] { g.insert1(ops::MatrixMul(), {m, a}); });
    expect_contains(msg, "MatrixMul(transposeA=false, transposeB=false");
    expect_contains(msg, "{3,5} float32");

    msg = error_of<dnn::ShapeError>([&] { g.insert1(reshape({5, -1}), {a}); });
    expect_contains(msg, "Reshape(shape=[5,-1])");
    expect_contains(msg, "{2,3}");
    // nothing was added by the failed inserts
    EXPECT_EQ(g.vars().size(), 3u);
    EXPECT_TRUE(g.topo_order().empty());
}

TEST(GraphBuild, DTypeMismatchIsADTypeError) {
    ComputingGraph g;
    auto* a = g.input("a", {3}, dnn::dtype::Float32, cpu());
    auto* i = g.input("i", {3}, dnn::dtype::Int32, cpu());
    auto msg = error_of<dnn::DTypeError>([&] { g.insert1(elemwise(Mode::ADD), {a, i}); });
    expect_contains(msg, "Elemwise(mode=ADD)");
    expect_contains(msg, "int32");
}

TEST(GraphBuild, VarsOfAnotherGraphOrNullAreRefused) {
    ComputingGraph g, other;
    auto* a = g.input("a", {3}, dnn::dtype::Float32, cpu());
    auto* foreign = other.input("f", {3}, dnn::dtype::Float32, cpu());
    expect_contains(error_of<dnn::ParamError>([&] {
                        g.insert1(elemwise(Mode::ADD), {a, foreign});
                    }),
                    "not a var of this graph");
    EXPECT_THROW(g.insert1(elemwise(Mode::RELU), {nullptr}), dnn::ParamError);
    // an output that is not in the graph
    expect_contains(error_of<dnn::ParamError>([&] { g.compile({foreign}); }),
                    "not a var of this graph");
    EXPECT_THROW(g.compile({nullptr}), dnn::ParamError);
    EXPECT_THROW(g.compile(std::span<VarNode* const>{}), dnn::ParamError);
    // inputs on two comp nodes
    auto* c = g.input("c", {3}, dnn::dtype::Float32, CompNode::load("cpu1"));
    expect_contains(error_of<dnn::ParamError>([&] {
                        g.insert1(elemwise(Mode::ADD), {a, c});
                    }),
                    "cpu1");
    EXPECT_THROW(g.input("bad", {3}, dnn::dtype::Float32, CompNode()), dnn::ParamError);
    EXPECT_THROW(g.constant(DeviceTensor()), dnn::ParamError);
}

TEST(GraphBuild, ReplaceVarRefusesACycleAndMismatchedLayouts) {
    ComputingGraph g;
    auto* x = g.input("x", {3}, dnn::dtype::Float32, cpu());
    auto* y = g.insert1(elemwise(Mode::RELU), {x});
    auto* z = g.insert1(elemwise(Mode::NEGATE), {y});
    auto* w = g.insert1(elemwise(Mode::EXP), {z});
    // z depends on y: readers of y reading z would make z read itself
    expect_contains(error_of<dnn::ParamError>([&] { g.replace_var(y, z); }), "cycle");
    auto* other = g.input("o", {4}, dnn::dtype::Float32, cpu());
    EXPECT_THROW(g.replace_var(z, other), dnn::ParamError);
    // a valid rewrite: exp now reads x directly
    g.replace_var(z, x);
    EXPECT_EQ(w->owner()->inputs()[0], x);
    EXPECT_TRUE(z->users().empty());
    // nodes still read cannot be erased; unread ones can
    EXPECT_THROW(g.erase(y->owner()), dnn::ParamError);
    g.erase(z->owner());
    g.erase(y->owner());
    EXPECT_THROW(g.erase(x), dnn::ParamError);  // exp reads it
    g.erase(other);
    EXPECT_EQ(g.topo_order().size(), 1u);
}

TEST(GraphBuild, TopoOrderPutsProducersFirstAfterARewrite) {
    ComputingGraph g;
    auto* x = g.input("x", {3}, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(elemwise(Mode::RELU), {x});
    auto* b = g.insert1(elemwise(Mode::EXP), {a});
    auto* late = g.insert1(elemwise(Mode::NEGATE), {x});  // created after b's producer
    g.replace_var(a, late);                               // b now reads a later node
    auto order = g.topo_order({&b, 1});
    ASSERT_EQ(order.size(), 2u);
    EXPECT_EQ(order[0], late->owner());
    EXPECT_EQ(order[1], b->owner());
}

TEST(GraphBuild, DumpShowsEveryNode) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cpu());
    auto* b = g.constant(tensor({1, 2, 3}, {3}), "b");
    auto* y = g.insert1(elemwise(Mode::ADD), {x, b});
    dnn::param::Split sp;
    sp.axis = 1;
    sp.sizes = {1, 2};
    const auto& parts = g.insert(ops::Split(sp), {y});
    auto* r = g.insert1(elemwise(Mode::RELU), {parts[1]});
    EXPECT_EQ(g.dump({&r, 1}),
              "%0 'x' = input : {2,3} float32 @cpu0\n"
              "%1 'b' = const [1, 2, 3] : {3} float32 @cpu0\n"
              "%2 = Elemwise(mode=ADD)(%0, %1) : {2,3} float32\n"
              "%3, %4 = Split(axis=1, sizes=[1,2])(%2) : {2,1} float32, {2,2} float32\n"
              "%5 = Elemwise(mode=RELU)(%4) : {2,2} float32\n"
              "outputs: %5\n");
}

TEST(GraphBuild, CopyHoldsWhatTheOutputsNeedAndLeavesTheOriginal) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cpu());
    auto* unused = g.input("unused", {1}, dnn::dtype::Float32, cpu());
    auto* w = g.constant(tensor(std::vector<float>(3, 2.f), {3}), "w");
    auto* y = g.insert1(elemwise(dnn::param::Elemwise::Mode::MUL), {x, w});
    y->set_name("y");
    g.insert1(elemwise(dnn::param::Elemwise::Mode::ADD), {x, x});  // not needed by y
    std::string before = g.dump();

    std::vector<VarNode*> outs{y};
    auto c = g.copy(outs);
    ASSERT_NE(outs[0], y);
    EXPECT_TRUE(c->owns(outs[0]));
    EXPECT_EQ(outs[0]->name(), "y");
    EXPECT_EQ(c->topo_order().size(), 1u);
    size_t inputs = 0, consts = 0;
    for (VarNode* v : c->vars()) {
        if (v->kind() == VarNode::Kind::Input) {
            ++inputs;
            EXPECT_EQ(v->name(), "x");
        } else if (v->kind() == VarNode::Kind::Const) {
            ++consts;
            EXPECT_EQ(v->name(), "w");
            EXPECT_EQ(v->value().raw_ptr(), w->value().raw_ptr());  // shared, not copied
        }
    }
    EXPECT_EQ(inputs, 1u);
    EXPECT_EQ(consts, 1u);
    EXPECT_EQ(g.dump(), before);  // the original is untouched
    (void)unused;

    std::vector<VarNode*> foreign{outs[0]};
    EXPECT_THROW(g.copy(foreign), dnn::ParamError);
}
