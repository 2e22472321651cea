// Elementwise fusion: the graph before and after, and the fused graph's results against the
// unfused graph's (the same kernels: equal bit for bit) and the naive reference.
#include "../graph/fused_elemwise.h"
#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/graph/passes.h"
#include "neomeg/serialization/errors.h"
#include "neomeg/serialization/model_file.h"

using namespace neomeg;
using namespace neomeg::graph;
using namespace neomeg::graph::test;

namespace {

CompileOptions unfused() {
    CompileOptions o;
    o.fuse_elemwise = false;
    return o;
}

// Runs `exe` on `inputs` (by input name) and returns every output.
std::vector<std::vector<float>> run(Executable& exe,
                                    const std::map<std::string, DeviceTensor>& inputs) {
    for (const auto& [name, value] : inputs)
        exe.set_input(name, value);
    exe.execute();
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < exe.outputs().size(); ++i)
        out.push_back(floats(exe.output(i)));
    return out;
}

}  // namespace

TEST(PassFuseElemwise, ChainsBecomeOneNodeWhoseIntermediatesNobodyElseReads) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3, 700}, dnn::dtype::Float32, cpu());
    auto* w = g.input("w", {3, 1}, dnn::dtype::Float32, cpu());  // broadcast along axes 0 and 2
    auto* c = g.constant(tensor({0.25f}, {1}), "c");
    auto* a = g.insert1(elemwise(Mode::MUL), {x, w});
    auto* b = g.insert1(elemwise(Mode::ADD), {a, c});
    auto* r = g.insert1(elemwise(Mode::RELU), {b});
    auto* s = g.insert1(elemwise(Mode::MUL), {r, r});
    auto* y = g.insert1(elemwise(Mode::SUB), {s, x});
    auto* z = g.insert1(elemwise(Mode::EXP), {b});  // b has a reader outside y's chain
    auto* m = g.insert1(reduce(dnn::param::Reduce::Mode::SUM, 2), {z});  // not elementwise
    auto* n = g.insert1(elemwise(Mode::NEGATE), {m});  // {2,3,1}: another shape, a group of one
    std::vector<VarNode*> outs{y, z, n};
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,700} float32 @cpu0\n"
              "%1 'w' = input : {3,1} float32 @cpu0\n"
              "%2 'c' = const [0.25] : {1} float32 @cpu0\n"
              "%3 = Elemwise(mode=MUL)(%0, %1) : {2,3,700} float32\n"
              "%4 = Elemwise(mode=ADD)(%3, %2) : {2,3,700} float32\n"
              "%5 = Elemwise(mode=RELU)(%4) : {2,3,700} float32\n"
              "%6 = Elemwise(mode=MUL)(%5, %5) : {2,3,700} float32\n"
              "%7 = Elemwise(mode=SUB)(%6, %0) : {2,3,700} float32\n"
              "%8 = Elemwise(mode=EXP)(%4) : {2,3,700} float32\n"
              "%9 = Reduce(mode=SUM, axis=2)(%8) : {2,3,1} float32\n"
              "%10 = Elemwise(mode=NEGATE)(%9) : {2,3,1} float32\n"
              "outputs: %7 %8 %10\n");
    auto plain = g.compile(outs, unfused());
    EXPECT_EQ(plain->num_steps(), 8u);

    // y's chain stops at b, which exp also reads; exp's output z is an output, so it stays an
    // intermediate of nobody; b's own chain (a, b) fuses once its readers are fused nodes.
    EXPECT_EQ(fuse_elemwise(g, outs), 2u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {2,3,700} float32 @cpu0\n"
              "%1 'w' = input : {3,1} float32 @cpu0\n"
              "%2 'c' = const [0.25] : {1} float32 @cpu0\n"
              "%12 = FusedElemwise(MUL(i0,i1), ADD(s0,i2))(%0, %1, %2) : {2,3,700} float32\n"
              "%8 = Elemwise(mode=EXP)(%12) : {2,3,700} float32\n"
              "%9 = Reduce(mode=SUM, axis=2)(%8) : {2,3,1} float32\n"
              "%10 = Elemwise(mode=NEGATE)(%9) : {2,3,1} float32\n"
              "%11 = FusedElemwise(RELU(i0), MUL(s0,s0), SUB(s1,i1))(%12, %0) : {2,3,700} "
              "float32\n"
              "outputs: %11 %8 %10\n");
    EXPECT_EQ(fuse_elemwise(g, outs), 0u);  // nothing left to fuse

    auto fused = g.compile(outs, unfused());
    EXPECT_EQ(fused->num_steps(), 5u);
    std::mt19937 rng(1);
    auto xv = random_floats(2 * 3 * 700, rng), wv = random_floats(3, rng);
    std::map<std::string, DeviceTensor> in{{"x", tensor(xv, {2, 3, 700})},
                                           {"w", tensor(wv, {3, 1})}};
    auto want = run(*plain, in);
    EXPECT_EQ(run(*fused, in), want);
    auto ref = reference_eval(g, outs, {{x, xv}, {w, wv}});
    for (size_t i = 0; i < outs.size(); ++i)
        expect_near(want[i], ref[i]);
    // y = relu(x * w + c)^2 - x, by hand for one element
    float e = std::max(xv[5] * wv[0] + 0.25f, 0.0f);
    EXPECT_NEAR(want[0][5], e * e - xv[5], 1e-5);
}

// Blocks of every kind: one block for a small tensor, rows of a middle axis with a partial last
// block, and runs of a long last axis; scalar and row operands broadcast into each.
TEST(PassFuseElemwise, EveryBlockingGivesTheUnfusedResults) {
    constexpr size_t K = FusedElemwise::kBlockElems;
    const std::vector<dnn::TensorShape> shapes = {
            {8}, {3, 5, K / 2 - 192}, {2 * K + 904}, {2, 2 * K + 4}, {}};
    for (const auto& shape : shapes) {
        SCOPED_TRACE(shape.to_string());
        ComputingGraph g;
        auto* x = g.input("x", shape, dnn::dtype::Float32, cpu());
        dnn::TensorShape row = shape;
        if (row.ndim)
            for (size_t d = 0; d + 1 < row.ndim; ++d)
                row[d] = 1;
        auto* r = g.input("r", row, dnn::dtype::Float32, cpu());
        auto* half = g.constant(tensor({0.5f}, {1}));
        auto* v = g.insert1(elemwise(Mode::MUL), {x, half});
        v = g.insert1(elemwise(Mode::ADD), {v, r});
        v = g.insert1(elemwise(Mode::TANH), {v});
        v = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {v, x, r});
        v = g.insert1(elemwise(Mode::MAX), {v, half});
        // Single IEEE operations on whole and one-element inputs: FusedElemwise's own loops.
        auto* u = g.insert1(elemwise(Mode::SQUARE), {x});
        u = g.insert1(elemwise(Mode::TRUE_DIV), {u, g.insert1(elemwise(Mode::ABS), {x})});
        u = g.insert1(elemwise(Mode::SUB), {half, u});
        u = g.insert1(elemwise(Mode::MIN), {u, g.insert1(elemwise(Mode::NEGATE), {x})});
        u = g.insert1(elemwise(Mode::SWITCH_GT0), {x, u});
        u = g.insert1(elemwise(Mode::RELU), {g.insert1(elemwise(Mode::MUL), {u, x})});
        std::vector<VarNode*> outs{v, u};
        auto plain = g.compile(outs, unfused());
        auto fused = g.compile(outs);
        EXPECT_EQ(plain->num_steps(), 14u);
        // A scalar x times the {1} constant gives {1}: the chains split where shapes change.
        EXPECT_EQ(fused->num_steps(), shape.ndim ? 2u : 4u);
        std::mt19937 rng(2);
        auto xv = random_floats(shape.total_nr_elems(), rng);
        auto rv = random_floats(row.total_nr_elems(), rng);
        std::map<std::string, DeviceTensor> in{{"x", tensor(xv, shape)}, {"r", tensor(rv, row)}};
        auto want = run(*plain, in);
        EXPECT_EQ(run(*fused, in), want);
        auto ref = reference_eval(g, outs, {{x, xv}, {r, rv}});
        expect_near(want[0], ref[0]);
        expect_near(want[1], ref[1]);
    }
}

TEST(PassFuseElemwise, LeavesOutputsOtherDtypesAndOtherShapesOutside) {
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* a = g.insert1(elemwise(Mode::EXP), {x});
    auto* b = g.insert1(elemwise(Mode::NEGATE), {a});  // an output: stays a var of its own
    auto* lt = g.insert1(elemwise(Mode::LT), {b, x});  // float -> bool
    auto* n = g.insert1(elemwise(Mode::NOT), {lt});    // bool -> bool
    auto* t = g.insert1(elemwise(Mode::NOT), {n});
    std::vector<VarNode*> outs{b, t};
    EXPECT_EQ(fuse_elemwise(g, outs), 2u);
    EXPECT_EQ(g.dump(outs),
              "%0 'x' = input : {4} float32 @cpu0\n"
              "%7 = FusedElemwise(EXP(i0), NEGATE(s0))(%0) : {4} float32\n"
              "%3 = Elemwise(mode=LT)(%7, %0) : {4} bool\n"
              "%6 = FusedElemwise(NOT(i0), NOT(s0))(%3) : {4} bool\n"
              "outputs: %7 %6\n");
}

// SGD with momentum per parameter: v' = v * m + g is an output (the new momentum buffer) that
// p' = v' * -lr + p reads; both fuse, v' written by the fused node as its second output.
TEST(PassFuseElemwise, AnIntermediateThatIsAnOutputIsExported) {
    for (const dnn::TensorShape& shape :
         {dnn::TensorShape{120, 256}, dnn::TensorShape{7},
          dnn::TensorShape{3, 2 * FusedElemwise::kBlockElems + 5}}) {
        SCOPED_TRACE(shape.to_string());
        ComputingGraph g;
        auto* p = g.input("p", shape, dnn::dtype::Float32, cpu());
        auto* v = g.input("v", shape, dnn::dtype::Float32, cpu());
        auto* grad = g.input("g", shape, dnn::dtype::Float32, cpu());
        auto* m = g.constant(tensor({0.9f}, {1}), "m");
        auto* lr = g.constant(tensor({-0.01f}, {1}), "lr");
        auto* v2 = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {v, m, grad});
        auto* p2 = g.insert1(elemwise(Mode::FUSE_MUL_ADD3), {v2, lr, p});
        // A float32 chain of single operations (the fused node's own loops) with an export too.
        auto* r = g.insert1(elemwise(Mode::RELU), {grad});
        auto* q = g.insert1(elemwise(Mode::ADD), {r, p});
        std::vector<VarNode*> outs{p2, v2, q, r};
        auto plain = g.compile(outs, unfused());
        EXPECT_EQ(plain->num_steps(), 4u);
        EXPECT_EQ(fuse_elemwise(g, outs), 2u);
        const std::string s = shape.to_string();
        EXPECT_EQ(g.dump(outs),
                  "%0 'p' = input : " + s +
                          " float32 @cpu0\n"
                          "%1 'v' = input : " +
                          s +
                          " float32 @cpu0\n"
                          "%2 'g' = input : " +
                          s +
                          " float32 @cpu0\n"
                          "%3 'm' = const [0.9] : {1} float32 @cpu0\n"
                          "%4 'lr' = const [-0.01] : {1} float32 @cpu0\n"
                          "%9, %10 = FusedElemwise(RELU(i0), ADD(s0,i1); out s0)(%2, %0) : " +
                          s + " float32, " + s +
                          " float32\n"
                          "%11, %12 = FusedElemwise(FUSE_MUL_ADD3(i0,i1,i2), "
                          "FUSE_MUL_ADD3(s0,i3,i4); out "
                          "s0)(%1, %3, %2, %4, %0) : " +
                          s + " float32, " + s +
                          " float32\n"
                          "outputs: %11 %12 %9 %10\n");
        auto fused = g.compile(outs, unfused());
        EXPECT_EQ(fused->num_steps(), 2u);
        std::mt19937 rng(5);
        const size_t n = shape.total_nr_elems();
        auto pv = random_floats(n, rng), vv = random_floats(n, rng), gv = random_floats(n, rng);
        std::map<std::string, DeviceTensor> in{
                {"p", tensor(pv, shape)}, {"v", tensor(vv, shape)}, {"g", tensor(gv, shape)}};
        auto want = run(*plain, in);
        EXPECT_EQ(run(*fused, in), want);  // the same kernels: bit for bit
        auto ref = reference_eval(g, outs, {{p, pv}, {v, vv}, {grad, gv}});
        for (size_t i = 0; i < outs.size(); ++i)
            expect_near(want[i], ref[i]);
        EXPECT_NEAR(want[1][3], vv[3] * 0.9f + gv[3], 1e-6);
        EXPECT_NEAR(want[0][3], (vv[3] * 0.9f + gv[3]) * -0.01f + pv[3], 1e-6);
    }
}

TEST(PassFuseElemwise, BadChainsAreParamErrors) {
    using Step = FusedElemwise::Step;
    EXPECT_THROW(FusedElemwise(1, {}), dnn::ParamError);                         // empty
    EXPECT_THROW(FusedElemwise(1, {Step{Mode::ADD, {0}}}), dnn::ParamError);     // arity
    EXPECT_THROW(FusedElemwise(1, {Step{Mode::RELU, {1}}}), dnn::ParamError);    // no step 0 yet
    EXPECT_THROW(FusedElemwise(2, {Step{Mode::ADD, {0, 2}}}), dnn::ParamError);  // reads itself
    const std::vector<Step> two{Step{Mode::ADD, {0, 1}}, Step{Mode::RELU, {2}}};
    EXPECT_THROW(FusedElemwise(2, two, {1}), dnn::ParamError);     // the last step: output 0
    EXPECT_THROW(FusedElemwise(2, two, {0, 0}), dnn::ParamError);  // twice
    EXPECT_EQ(FusedElemwise(2, two, {0}).to_string(),
              "FusedElemwise(ADD(i0,i1), RELU(s0); out s0)");
    FusedElemwise ok(2, {Step{Mode::ADD, {0, 1}}, Step{Mode::RELU, {2}}});
    EXPECT_EQ(ok.to_string(), "FusedElemwise(ADD(i0,i1), RELU(s0))");
    const dnn::TensorLayout f32({2}, dnn::dtype::Float32), i32({2}, dnn::dtype::Int32);
    const dnn::TensorLayout mixed[] = {f32, i32};
    EXPECT_THROW(ok.infer_layouts(cpu(), mixed, {}), dnn::Error);  // ADD of two dtypes
    const dnn::TensorLayout one[] = {f32};
    EXPECT_THROW(ok.infer_layouts(cpu(), one, {}), dnn::ParamError);  // input count
}

// A model file holds registry ops only: trace.dump writes the unfused graph, and the loader's
// compile fuses. Dumping a fused graph is a clear error, not a file nobody can load.
TEST(PassFuseElemwise, AFusedGraphIsNotWrittenToAModelFile) {
    ComputingGraph g;
    auto* x = g.input("x", {4}, dnn::dtype::Float32, cpu());
    auto* y = g.insert1(elemwise(Mode::NEGATE), {g.insert1(elemwise(Mode::EXP), {x})});
    std::vector<VarNode*> outs{y};
    serialization::NamedVar named[] = {{"y", y}};
    EXPECT_NO_THROW(serialization::dump(g, named));
    ASSERT_EQ(fuse_elemwise(g, outs), 1u);
    named[0].var = outs[0];
    EXPECT_THROW(serialization::dump(g, named), serialization::ModelError);
}
