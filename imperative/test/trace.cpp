#include "neomeg/imperative/trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "neomeg/dnn/errors.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

namespace {

using Mode = dnn::param::Elemwise::Mode;

Tensor elemwise(Mode mode, std::vector<Tensor> in) {
    dnn::param::Elemwise p;
    p.mode = mode;
    return imperative::apply(ops::Elemwise(p), in)[0];
}

Tensor vec(std::vector<float> v) {
    return Tensor::from_host(v.data(), {v.size()}, dnn::dtype::Float32, CompNode::load("cpu0"));
}

std::vector<float> host(const DeviceTensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

// The graph-capable float32 custom ops of these tests: one input, an output of its layout, no
// workspace. Self gives run and exec.
template <class Self>
struct GraphCapableCustomOp : CustomOpDef {
    GraphCapableCustomOp(const char* name, size_t hash) : m_name(name), m_hash(hash) {}
    const char* name() const override { return m_name; }
    size_t hash() const override { return m_hash; }
    bool is_same(const OpDef& rhs) const override {
        return dynamic_cast<const Self*>(&rhs) != nullptr;
    }
    std::string to_string() const override { return m_name; }
    std::shared_ptr<OpDef> clone() const override { return std::make_shared<Self>(); }
    bool graph_capable() const override { return true; }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        return {dnn::TensorLayout(in[0], in[0].dtype)};
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }

private:
    const char* m_name;
    size_t m_hash;
};

std::string g_where = "test.py:1";
std::string where() {
    return g_where;
}

}  // namespace

TEST(TraceRecorder, RecordsApplyIntoAGraphThatReplaysOnNewInputs) {
    auto x = vec({1, -2, 3});
    auto w = vec({2, 2, 2});  // read from outside: an external
    TraceRecorder rec(&where);
    EXPECT_FALSE(TraceRecorder::any_active());
    rec.activate();
    EXPECT_TRUE(TraceRecorder::any_active());
    auto* in = rec.add_input(x, "x");
    auto y = elemwise(Mode::RELU, {elemwise(Mode::MUL, {x, w})});
    rec.deactivate();
    EXPECT_FALSE(TraceRecorder::any_active());
    elemwise(Mode::ADD, {x, x});  // not recorded: no recorder is active

    ASSERT_EQ(rec.ops().size(), 2u);
    EXPECT_EQ(rec.ops()[0].op->to_string(), "Elemwise(mode=MUL)");
    EXPECT_EQ(rec.ops()[0].location, "test.py:1");
    ASSERT_EQ(rec.externals().size(), 1u);
    EXPECT_EQ(rec.externals()[0].var->kind(), graph::VarNode::Kind::Input);
    EXPECT_EQ(rec.var_of(x), in);
    graph::VarNode* out = rec.var_of(y);
    ASSERT_NE(out, nullptr);

    auto exe = rec.graph().compile({out});
    auto cn = CompNode::load("cpu0");
    std::vector<float> x2{-1, 4, 0.5f}, w2{3, 3, -1};
    exe->set_input("x", DeviceTensor::from_host(x2.data(), {3}, dnn::dtype::Float32, cn));
    exe->set_input(rec.externals()[0].var->name(),
                   DeviceTensor::from_host(w2.data(), {3}, dnn::dtype::Float32, cn));
    exe->execute();
    EXPECT_EQ(host(exe->output(0)), (std::vector<float>{0, 12, 0}));
}

TEST(TraceRecorder, BackwardRulesAreRecordedToo) {
    auto x = vec({1, 2, 3});
    TraceRecorder rec(&where);
    rec.activate();
    rec.add_input(x, "x");
    auto key = GradKey::make();
    Tensor xa = x;
    key->attach(xa);
    key->activate();
    auto y = elemwise(Mode::MUL, {xa, xa});
    key->deactivate();
    std::vector<Tensor> ys{y}, wrt{xa};
    auto grads = key->backward(ys, {}, wrt);
    rec.deactivate();
    ASSERT_TRUE(grads[0].valid());
    graph::VarNode* g = rec.var_of(grads[0]);
    ASSERT_NE(g, nullptr);  // the gradient is a graph var: computed from x by recorded ops
    // backward's default dy (ones, made by a generator outside apply) was read from outside
    ASSERT_EQ(rec.externals().size(), 1u);
    EXPECT_EQ(rec.freeze_external(0)->kind(), graph::VarNode::Kind::Const);
    auto exe = rec.graph().compile({g});
    std::vector<float> x2{5, -1, 0};
    exe->set_input("x", DeviceTensor::from_host(x2.data(), {3}, dnn::dtype::Float32,
                                                CompNode::load("cpu0")));
    exe->execute();
    EXPECT_EQ(host(exe->output(0)), (std::vector<float>{10, -2, 0}));
}

TEST(TraceRecorder, CheckModeNamesTheDivergingOpAndBothLines) {
    auto x = vec({1, 2});
    TraceRecorder rec(&where);
    rec.activate();
    g_where = "a.py:10";
    elemwise(Mode::ADD, {x, x});
    g_where = "a.py:11";
    elemwise(Mode::MUL, {x, x});
    rec.deactivate();

    rec.activate(TraceRecorder::Mode::Check);  // the same ops: fine
    g_where = "a.py:10";
    elemwise(Mode::ADD, {x, x});
    g_where = "a.py:11";
    elemwise(Mode::MUL, {x, x});
    EXPECT_NO_THROW(rec.finish_check());
    rec.deactivate();

    rec.activate(TraceRecorder::Mode::Check);  // another op second
    g_where = "a.py:10";
    elemwise(Mode::ADD, {x, x});
    g_where = "b.py:20";
    try {
        elemwise(Mode::SUB, {x, x});
        FAIL() << "no TraceMismatch";
    } catch (const TraceMismatch& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("Elemwise(mode=SUB)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("b.py:20"), std::string::npos) << msg;
        EXPECT_NE(msg.find("a.py:11"), std::string::npos) << msg;
    }
    rec.deactivate();

    rec.activate(TraceRecorder::Mode::Check);  // other input shapes
    EXPECT_THROW(elemwise(Mode::ADD, {vec({1, 2, 3}), vec({1, 2, 3})}), TraceMismatch);
    rec.deactivate();

    rec.activate(TraceRecorder::Mode::Check);  // too few ops
    elemwise(Mode::ADD, {x, x});
    EXPECT_THROW(rec.finish_check(), TraceMismatch);
    rec.deactivate();
}

TEST(TraceRecorder, ExcludedRegionsAndOneRecorderPerThread) {
    auto x = vec({1});
    TraceRecorder rec, other;
    rec.activate();
    rec.begin_excluded();
    elemwise(Mode::ADD, {x, x});
    rec.end_excluded();
    EXPECT_THROW(rec.end_excluded(), dnn::ParamError);
    EXPECT_THROW(other.activate(), dnn::ParamError);
    rec.deactivate();
    EXPECT_TRUE(rec.ops().empty());
    EXPECT_TRUE(rec.ever_excluded());
}

TEST(TraceRecorder, AnOpTheGraphCannotHoldEndsTheRecordingNotTheCall) {
    struct Twice : CustomOpDef {
        const char* name() const override { return "Twice"; }
        size_t hash() const override { return 1; }
        bool is_same(const OpDef& rhs) const override {
            return dynamic_cast<const Twice*>(&rhs) != nullptr;
        }
        std::string to_string() const override { return "Twice"; }
        std::shared_ptr<OpDef> clone() const override { return std::make_shared<Twice>(); }
        std::vector<Tensor> run(std::span<const Tensor> in) const override {
            return {elemwise(Mode::ADD, {in[0], in[0]})};
        }
    };
    auto x = vec({4});
    TraceRecorder rec(&where);
    rec.activate();
    auto y = imperative::apply(Twice(), {&x, 1});
    rec.deactivate();
    std::vector<float> v(1);
    y[0].to_host(v.data());
    EXPECT_EQ(v[0], 8.0f);  // the eager result stands
    EXPECT_NE(rec.failure().find("Twice"), std::string::npos) << rec.failure();
}

TEST(TraceRecorder, AGraphCapableCustomOpIsRecordedAndRunByTheGraph) {
    // Counts its runs, as a collective's side effect would be: the graph must run it on every
    // execution, not hold the recorded result.
    static int runs = 0;
    struct Negate : GraphCapableCustomOp<Negate> {
        Negate() : GraphCapableCustomOp("Negate", 2) {}
        std::vector<Tensor> run(std::span<const Tensor> in) const override {
            auto out = Tensor::empty(in[0].shape(), in[0].dtype(), in[0].comp_node());
            auto src = in[0].contiguous();
            negate(static_cast<const float*>(src.dnn_tensor().raw_ptr()),
                   static_cast<float*>(out.dnn_tensor().raw_ptr()), in[0].shape().total_nr_elems());
            return {out};
        }
        void exec(CompNode, std::span<const dnn::TensorND> in, std::span<const dnn::TensorND> out,
                  dnn::Workspace) const override {
            negate(static_cast<const float*>(in[0].raw_ptr()),
                   static_cast<float*>(out[0].raw_ptr()), in[0].layout.total_nr_elems());
        }
        static void negate(const float* a, float* b, size_t n) {
            ++runs;
            for (size_t i = 0; i < n; ++i)
                b[i] = -a[i];
        }
    };
    auto x = vec({1, 2});
    TraceRecorder rec(&where);
    rec.activate();
    rec.add_input(x, "x");
    auto y = elemwise(Mode::MUL, {imperative::apply(Negate(), {&x, 1})[0], x});
    rec.deactivate();
    EXPECT_TRUE(rec.failure().empty()) << rec.failure();
    ASSERT_EQ(rec.ops().size(), 2u);
    EXPECT_EQ(rec.ops()[0].op->to_string(), "Negate");
    auto exe = rec.graph().compile({rec.var_of(y)});
    std::vector<float> x2{5, -3};
    exe->set_input("x", DeviceTensor::from_host(x2.data(), {2}, dnn::dtype::Float32,
                                                CompNode::load("cpu0")));
    int before = runs;
    exe->execute();
    exe->execute();
    EXPECT_EQ(runs, before + 2);
    EXPECT_EQ(host(exe->output(0)), (std::vector<float>{-25, -9}));
}

TEST(TraceRecorder, CompilePassesNeitherFoldNorMergeACustomOp) {
    // A collective runs on every execution even on a constant input (a broadcast's stand-in off
    // the root) and next to an identical one (its peers' graphs may not hold the twin).
    static int runs = 0;
    struct Twice : GraphCapableCustomOp<Twice> {
        Twice() : GraphCapableCustomOp("Twice", 3) {}
        std::vector<Tensor> run(std::span<const Tensor> in) const override {
            return {elemwise(Mode::ADD, {in[0], in[0]})};
        }
        void exec(CompNode, std::span<const dnn::TensorND> in, std::span<const dnn::TensorND> out,
                  dnn::Workspace) const override {
            ++runs;
            const auto* a = static_cast<const float*>(in[0].raw_ptr());
            auto* b = static_cast<float*>(out[0].raw_ptr());
            for (size_t i = 0; i < in[0].layout.total_nr_elems(); ++i)
                b[i] = 2 * a[i];
        }
    };
    auto c = vec({1, 2});
    TraceRecorder rec(&where);
    rec.activate();
    auto y = elemwise(Mode::ADD, {imperative::apply(Twice(), {&c, 1})[0],
                                  imperative::apply(Twice(), {&c, 1})[0]});
    rec.deactivate();
    ASSERT_TRUE(rec.failure().empty()) << rec.failure();
    ASSERT_EQ(rec.externals().size(), 1u);
    rec.freeze_external(0);                           // c: a constant of the graph
    auto exe = rec.graph().compile({rec.var_of(y)});  // constant folding and CSE on
    int before = runs;
    exe->execute();
    EXPECT_EQ(runs, before + 2);
    EXPECT_EQ(host(exe->output(0)), (std::vector<float>{4, 8}));
}

TEST(TraceRecorder, FailEndsARecordingButNotACheckOrAnExcludedRegion) {
    g_where = "test.py:1";
    TraceRecorder rec(&where);
    rec.activate();
    rec.begin_excluded();
    rec.fail("ignored");
    rec.end_excluded();
    EXPECT_TRUE(rec.failure().empty());
    rec.fail("a collective");
    rec.fail("a later reason");
    rec.deactivate();
    EXPECT_EQ(rec.failure(), "a collective at test.py:1");
    TraceRecorder checker(&where);
    checker.activate(TraceRecorder::Mode::Check);
    checker.fail("not while checking");
    checker.deactivate();
    EXPECT_TRUE(checker.failure().empty());
}

// A recording keeps no value the step itself let go: its memory peaks where eager mode's does.
// The allocator hands a dead tensor's block to the next tensor, so the recorder tells them apart
// by their storage's id, not their address: a later op reading the new tensor must record the
// new tensor's producer, and the replay must give the chain's value.
TEST(TraceRecorder, DeadValuesAreNotKeptAndAReusedAddressIsANewValue) {
    constexpr size_t kElems = 1 << 18, kChain = 8, kMiB = 1 << 20;
    auto cn = CompNode::load("cpu0");
    std::vector<float> xv(kElems, 0.25f);
    auto x = Tensor::from_host(xv.data(), {kElems}, dnn::dtype::Float32, cn);
    TraceRecorder rec(&where);
    rec.activate();
    rec.add_input(x, "x");
    const size_t before = cn.memory_stats().allocated;
    cn.reset_peak_memory_stats();
    Tensor y = x;
    for (size_t i = 0; i < kChain; ++i)
        y = elemwise(i % 2 ? Mode::NEGATE : Mode::TANH, {y});  // the previous y dies here
    rec.deactivate();
    EXPECT_LT(cn.memory_stats().peak_allocated - before, 3 * kMiB);
    ASSERT_EQ(rec.ops().size(), kChain);
    EXPECT_TRUE(rec.externals().empty());  // every input was a recorded value or x
    auto exe = rec.graph().compile({rec.var_of(y)});
    std::vector<float> x2(kElems, -0.5f);
    exe->set_input("x", DeviceTensor::from_host(x2.data(), {kElems}, dnn::dtype::Float32, cn));
    exe->execute();
    double v = -0.5;
    for (size_t i = 0; i < kChain; ++i)
        v = i % 2 ? -v : std::tanh(v);
    EXPECT_NEAR(host(exe->output(0))[kElems - 1], v, 1e-6);
}
