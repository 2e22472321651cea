// Host-value inference and dynamic shapes: shapes computed from shapes stay static (and follow
// new input shapes when a model is loaded for them); shapes that depend on data are dynamic and
// inferred by the executable on every run.
#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/graph/value_infer.h"
#include "neomeg/inference/model.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/serialization/model_file.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

DeviceTensor ints(const std::vector<int32_t>& v, CompNode cn = cpu()) {
    return DeviceTensor::from_host(v.data(), {v.size()}, dnn::dtype::Int32, cn);
}

std::vector<int32_t> int_values(const DeviceTensor& t) {
    std::vector<int32_t> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

ops::GetVarShape shape_of(std::vector<int32_t> axes) {
    dnn::param::GetVarShape p;
    p.axes = std::move(axes);
    return ops::GetVarShape(p);
}

ops::Concat concat0() {
    return ops::Concat(dnn::param::Concat{});
}

// x {n,c,h,w} -> ReshapeTo(x, [shape(x)[0], -1]) -> @ w {c*h*w, 5}: a CNN's flatten and head.
struct FlattenHead {
    ComputingGraph g;
    VarNode *x, *flat, *y;
    std::vector<float> w;

    explicit FlattenHead(size_t n) {
        std::mt19937 rng(7);
        w = random_floats(12 * 5, rng);
        x = g.input("x", {n, 3, 2, 2}, dnn::dtype::Float32, cpu());
        auto* batch = g.insert1(shape_of({0}), {x});
        auto* minus1 = g.constant(ints({-1}), "minus1");
        auto* shape = g.insert1(concat0(), {batch, minus1});
        flat = g.insert1(ops::ReshapeTo(), {x, shape});
        y = g.insert1(ops::MatrixMul(), {flat, g.constant(tensor(w, {12, 5}), "w")});
        y->set_name("y");
    }
};

std::vector<float> matmul_by_hand(const std::vector<float>& x, const std::vector<float>& w,
                                  size_t m, size_t k, size_t n) {
    std::vector<float> out(m * n);
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            double acc = 0;
            for (size_t t = 0; t < k; ++t)
                acc += double(x[i * k + t]) * w[t * n + j];
            out[i * n + j] = static_cast<float>(acc);
        }
    return out;
}

}  // namespace

TEST(GraphHostValue, ShapeOpsAndArithmeticOnThemAreInferredAtInsert) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 3, 2}, dnn::dtype::Float32, cpu());
    auto* all = g.insert1(shape_of({}), {x});
    auto* last = g.insert1(shape_of({-1}), {x});
    ASSERT_NE(all->host_value(), nullptr);
    EXPECT_EQ(int_values(*all->host_value()), (std::vector<int32_t>{4, 3, 2}));
    EXPECT_EQ(int_values(*last->host_value()), (std::vector<int32_t>{2}));
    // (x.shape[-1] * 3) as a value, then a broadcast to [6, 3].
    auto* six = g.insert1(elemwise(Mode::MUL), {last, g.constant(ints({3}))});
    EXPECT_EQ(int_values(*six->host_value()), (std::vector<int32_t>{6}));
    auto* target = g.insert1(concat0(), {six, g.constant(ints({3}))});
    auto* row = g.input("row", {1, 3}, dnn::dtype::Float32, cpu());
    auto* b = g.insert1(ops::BroadcastTo(), {row, target});
    EXPECT_EQ(b->shape().to_string(), "{6,3}");
    EXPECT_FALSE(b->shape_dynamic());
    // Data has no host value; a large constant keeps none either.
    EXPECT_EQ(x->host_value(), nullptr);
    EXPECT_EQ(b->host_value(), nullptr);
    std::vector<int32_t> big(kMaxHostValueElems + 1, 1);
    EXPECT_EQ(g.constant(ints(big))->host_value(), nullptr);

    auto exe = g.compile({b, all});
    EXPECT_EQ(exe->num_dynamic_steps(), 0u);
    exe->set_input("x", tensor(std::vector<float>(24, 0), {4, 3, 2}));
    exe->set_input("row", tensor({1, 2, 3}, {1, 3}));
    exe->execute();
    std::vector<float> want;
    for (int i = 0; i < 6; ++i)
        want.insert(want.end(), {1, 2, 3});
    EXPECT_EQ(floats(exe->output(0)), want);
    EXPECT_EQ(int_values(exe->output(1)), (std::vector<int32_t>{4, 3, 2}));
}

TEST(GraphHostValue, ReshapeToAComputedShapeIsStaticAndRuns) {
    FlattenHead m(4);
    EXPECT_EQ(m.flat->shape().to_string(), "{4,12}");
    EXPECT_FALSE(m.flat->shape_dynamic());
    auto exe = m.g.compile({m.y});
    EXPECT_EQ(exe->num_dynamic_steps(), 0u);
    std::mt19937 rng(8);
    auto xv = random_floats(48, rng);
    exe->set_input("x", tensor(xv, {4, 3, 2, 2}));
    exe->execute();
    expect_near(floats(exe->output(0)), matmul_by_hand(xv, m.w, 4, 12, 5));
}

TEST(GraphHostValue, InsertErrorsNameTheOpItsParamsAndInputShapes) {
    ComputingGraph g;
    auto* x = g.input("x", {4, 3}, dnn::dtype::Float32, cpu());
    auto* bad = g.constant(ints({5, -1}), "target");
    try {
        g.insert1(ops::ReshapeTo(), {x, bad});
        FAIL() << "no error";
    } catch (const dnn::ShapeError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("ComputingGraph::insert: ReshapeTo"), std::string::npos) << msg;
        EXPECT_NE(msg.find("{4,3} float32"), std::string::npos) << msg;
        EXPECT_NE(msg.find("[5, -1]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("no size for its -1"), std::string::npos) << msg;
    }
    EXPECT_THROW(g.insert1(ops::ReshapeTo(), {x, g.constant(ints({-1, -1}))}), dnn::ShapeError);
    EXPECT_THROW(g.insert1(ops::BroadcastTo(), {x, g.constant(ints({4, 2}))}), dnn::ShapeError);
    try {
        g.insert1(shape_of({2}), {x});
        FAIL() << "no error";
    } catch (const dnn::ParamError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("GetVarShape(axes=[2])"), std::string::npos) << msg;
        EXPECT_NE(msg.find("{4,3}"), std::string::npos) << msg;
    }
    // A failed insert leaves no node behind.
    EXPECT_TRUE(g.topo_order().empty());
}

namespace {

// x[x > 0] (values and indices, through CondTake and TakePrefix), doubled and summed, every var
// on `cn`: the count CondTake writes on cn decides the shapes of the steps after it.
void check_cond_take_graph(CompNode cn) {
    ComputingGraph g;
    auto* x = g.input("x", {6}, dnn::dtype::Float32, cn);
    auto* zero = g.constant(tensor({0}, {1}, cn), "zero");
    auto* mask = g.insert1(elemwise(Mode::LT), {zero, x});
    const auto& taken = g.insert(ops::CondTake(), {x, mask});
    auto* values = g.insert1(ops::TakePrefix(), {taken[0], taken[2]});
    auto* indices = g.insert1(ops::TakePrefix(), {taken[1], taken[2]});
    auto* doubled = g.insert1(elemwise(Mode::MUL), {values, g.constant(tensor({2}, {1}, cn))});
    auto* total = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 0), {doubled});
    EXPECT_TRUE(values->shape_dynamic());
    EXPECT_TRUE(doubled->shape_dynamic());
    EXPECT_FALSE(taken[0]->shape_dynamic());
    EXPECT_NE(g.dump().find("{6} float32 dynamic"), std::string::npos) << g.dump();

    std::vector<VarNode*> outs{doubled, indices, total};
    auto exe = g.compile(outs);
    EXPECT_EQ(exe->num_dynamic_steps(), 4u);
    EXPECT_TRUE(exe->outputs()[0].shape_dynamic);
    struct Case {
        std::vector<float> x, doubled;
        std::vector<int32_t> indices;
    };
    for (const Case& c :
         {Case{{1, -2, 3, -4, 5, 0}, {2, 6, 10}, {0, 2, 4}}, Case{{-1, -1, -1, -1, -1, -1}, {}, {}},
          Case{{1, 2, 3, 4, 5, 6}, {2, 4, 6, 8, 10, 12}, {0, 1, 2, 3, 4, 5}},
          Case{{-1, 7, -1, -1, -1, -1}, {14}, {1}}}) {
        exe->set_input("x", tensor(c.x, {6}, cn));
        exe->execute();
        EXPECT_EQ(exe->output(0).shape().to_string(), "{" + std::to_string(c.doubled.size()) + "}");
        EXPECT_EQ(floats(exe->output(0)), c.doubled);
        EXPECT_EQ(int_values(exe->output(1)), c.indices);
        float sum = 0;
        for (float v : c.doubled)
            sum += v;
        EXPECT_EQ(floats(exe->output(2)), std::vector<float>{sum});
    }
}

}  // namespace

TEST(GraphDynamic, CondTakeGivesADynamicShapeInferredOnEveryRun) {
    check_cond_take_graph(cpu());
}

TEST(GraphDynamicCuda, CondTakeGraphRunsOnGpu0) {
    // The count is written on the device; the executable reads it back (read_shape_value).
    if (!is_cuda_available())
        GTEST_SKIP() << "no CUDA device";
    check_cond_take_graph(CompNode::load("gpu0"));
}

TEST(GraphDynamic, ShapeValueIsReadFromTheNodeInAnyStride) {
    std::vector<int32_t> data{5, -1, 7, -1, 9, -1};
    auto t = ints(data);
    dnn::TensorND nd = t.as_nd();
    EXPECT_EQ(read_shape_value(cpu(), nd), data);
    // Every other element, and the same backwards.
    dnn::TensorND strided(nd.raw_ptr(), dnn::TensorLayout({3}, {2}, dnn::dtype::Int32));
    EXPECT_EQ(read_shape_value(cpu(), strided), (std::vector<int32_t>{5, 7, 9}));
    dnn::TensorND reversed(static_cast<int32_t*>(nd.raw_ptr()) + 4,
                           dnn::TensorLayout({3}, {-2}, dnn::dtype::Int32));
    EXPECT_EQ(read_shape_value(cpu(), reversed), (std::vector<int32_t>{9, 7, 5}));
    // A scalar, a broadcast element and an empty vector.
    dnn::TensorND scalar(static_cast<int32_t*>(nd.raw_ptr()) + 2,
                         dnn::TensorLayout(dnn::TensorShape{}, dnn::dtype::Int32));
    EXPECT_EQ(read_shape_value(cpu(), scalar), std::vector<int32_t>{7});
    dnn::TensorND repeated(nd.raw_ptr(), dnn::TensorLayout({4}, {0}, dnn::dtype::Int32));
    EXPECT_EQ(read_shape_value(cpu(), repeated), (std::vector<int32_t>{5, 5, 5, 5}));
    dnn::TensorND empty(nd.raw_ptr(), dnn::TensorLayout({0}, dnn::dtype::Int32));
    EXPECT_TRUE(read_shape_value(cpu(), empty).empty());
}

TEST(GraphDynamic, ShapeValueOfAnotherDtypeOrRankIsAShapeError) {
    auto f = tensor({1, 2}, {2});
    EXPECT_THROW(read_shape_value(cpu(), f.as_nd()), dnn::ShapeError);
    auto m = ints({1, 2, 3, 4});
    dnn::TensorND matrix(m.as_nd().raw_ptr(), dnn::TensorLayout({2, 2}, dnn::dtype::Int32));
    try {
        read_shape_value(cpu(), matrix);
        FAIL() << "expected ShapeError";
    } catch (const dnn::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("not an int32 vector"), std::string::npos) << e.what();
    }
}

TEST(GraphDynamic, ACopyWhereTheShapeInputBecameAConstantIsStatic) {
    // As a trace records: the target shape is an input first and a constant after.
    ComputingGraph g;
    auto* x = g.input("x", {2, 6}, dnn::dtype::Float32, cpu());
    auto* shape = g.input("shape", {2}, dnn::dtype::Int32, cpu());
    auto* y = g.insert1(ops::ReshapeTo(), {x, shape}, {.output_shapes = {{3, 4}}, .comp_node = {}});
    EXPECT_TRUE(y->shape_dynamic());
    EXPECT_EQ(y->shape().to_string(), "{3,4}");  // the caller's shapes stand in
    auto* c = g.constant(ints({4, -1}));
    g.replace_var(shape, c);
    std::vector<VarNode*> outs{y};
    auto copy = g.copy(outs);
    EXPECT_FALSE(outs[0]->shape_dynamic());
    EXPECT_EQ(outs[0]->shape().to_string(), "{4,3}");
}

TEST(GraphDynamic, ModelFollowsNewBatchSizesAndDataDependentShapes) {
    FlattenHead m(4);
    serialization::DumpOptions opt;
    opt.input_shapes["x"] = {-1, 3, 2, 2};
    auto bytes = serialization::dump(m.g, std::vector<serialization::NamedVar>{{"y", m.y}}, opt);
    auto model = inference::Model::load(std::span<const uint8_t>(bytes));
    std::mt19937 rng(9);
    for (size_t n : {1u, 7u, 4u, 7u}) {
        auto xv = random_floats(n * 12, rng);
        model.set_input("x", xv.data(), std::vector<int64_t>{int64_t(n), 3, 2, 2});
        model.run();
        auto out = model.output("y");
        EXPECT_EQ(out.shape(), (std::vector<int64_t>{int64_t(n), 5}));
        auto got = out.to_doubles();
        auto want = matmul_by_hand(xv, m.w, n, 12, 5);
        for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-4) << "batch " << n << " element " << i;
    }

    ComputingGraph g;
    auto* x = g.input("x", {5}, dnn::dtype::Float32, cpu());
    auto* mask = g.insert1(elemwise(Mode::LT), {g.constant(tensor({0}, {1})), x});
    const auto& taken = g.insert(ops::CondTake(), {x, mask});
    auto* values = g.insert1(ops::TakePrefix(), {taken[0], taken[2]});
    auto cbytes = serialization::dump(g, std::vector<serialization::NamedVar>{{"v", values}});
    auto cmodel = inference::Model::load(std::span<const uint8_t>(cbytes));
    std::vector<float> xv{3, -1, 0, 2, -5};
    cmodel.set_input("x", xv.data(), std::vector<int64_t>{5});
    cmodel.run();
    EXPECT_EQ(cmodel.output("v").to_doubles(), (std::vector<double>{3, 2}));
}

TEST(GraphDynamic, ConstantFoldingLeavesDynamicShapesToTheRun) {
    // CondTake on constants: folded up to the count, which is data; TakePrefix runs.
    ComputingGraph g;
    std::vector<float> big(100, -1);
    big[3] = 4;
    big[50] = 5;
    auto* x = g.constant(tensor(big, {100}), "x");
    auto* mask = g.insert1(elemwise(Mode::LT), {g.constant(tensor({0}, {1})), x});
    const auto& taken = g.insert(ops::CondTake(), {x, mask});
    auto* values = g.insert1(ops::TakePrefix(), {taken[0], taken[2]});
    EXPECT_TRUE(values->shape_dynamic());
    auto exe = g.compile({values});
    EXPECT_EQ(exe->num_dynamic_steps(), 1u);
    exe->execute();
    EXPECT_EQ(floats(exe->output(0)), (std::vector<float>{4, 5}));
}
