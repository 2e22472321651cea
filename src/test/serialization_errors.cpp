// Model files that must not load: each broken on purpose in one way, built with the schema's own
// flatbuffers API, and each a ModelError (ModelVersionError for versions) whose message says what
// is wrong. The last test fuzzes a real model: truncation at every length, byte flips and random
// bytes give errors only, never a crash (run it under NEOMEG_SANITIZE=ON to check reads).
#include <functional>

#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/serialization/model_generated.h"
#include "neomeg/serialization/params_generated.h"
#include "serialization_test_util.h"

namespace neomeg::serialization::test {
namespace {

struct InputSpec {
    std::string name = "x", dtype = "float32";
    std::vector<int64_t> shape{2, 3}, sample{2, 3};
};
struct ConstSpec {
    std::string name = "c", dtype = "float32";
    std::vector<int64_t> shape{3};
    std::vector<uint8_t> data = std::vector<uint8_t>(12, 0);
};
struct NodeSpec {
    std::string type = "Elemwise", param_set = "Elemwise";
    std::vector<uint8_t> params;  // empty: Elemwise(mode=ADD)
    std::vector<uint32_t> inputs{0, 1};
    uint32_t num_outputs = 1;
    std::vector<std::vector<int64_t>> output_shapes;
    std::vector<std::string> output_names;
};
struct OutputSpec {
    std::string name = "y";
    uint32_t var = 2;
};
// A valid model: y = x + c, with x {2,3} and c {3}.
struct ModelSpec {
    uint32_t version = kFormatVersion;
    std::vector<InputSpec> inputs{InputSpec{}};
    std::vector<ConstSpec> consts{ConstSpec{}};
    std::vector<NodeSpec> nodes{NodeSpec{}};
    std::vector<OutputSpec> outputs{OutputSpec{}};
};

std::vector<uint8_t> elemwise_params(uint32_t mode) {
    flatbuffers::FlatBufferBuilder b;
    b.ForceDefaults(true);
    b.Finish(fbs::param::CreateElemwise(b, mode));
    return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

std::vector<uint8_t> build(const ModelSpec& m) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fbs::Input>> ins;
    for (const auto& i : m.inputs)
        ins.push_back(fbs::CreateInput(b, b.CreateString(i.name), b.CreateString(i.dtype),
                                       b.CreateVector(i.shape), b.CreateVector(i.sample)));
    std::vector<flatbuffers::Offset<fbs::Constant>> cs;
    for (const auto& c : m.consts)
        cs.push_back(fbs::CreateConstant(
                b, b.CreateString(c.name),
                fbs::CreateTensor(b, b.CreateString(c.dtype), b.CreateVector(c.shape),
                                  b.CreateVector(c.data))));
    std::vector<flatbuffers::Offset<fbs::OpNode>> ns;
    auto add = elemwise_params(static_cast<uint32_t>(dnn::param::Elemwise::Mode::ADD));
    for (const auto& n : m.nodes) {
        std::vector<flatbuffers::Offset<fbs::Shape>> shapes;
        for (const auto& s : n.output_shapes)
            shapes.push_back(fbs::CreateShape(b, b.CreateVector(s)));
        std::vector<flatbuffers::Offset<flatbuffers::String>> names;
        for (const auto& s : n.output_names)
            names.push_back(b.CreateString(s));
        ns.push_back(fbs::CreateOpNode(b, b.CreateString(n.type), b.CreateString(n.param_set),
                                       b.CreateVector(n.params.empty() ? add : n.params),
                                       b.CreateVector(n.inputs), n.num_outputs,
                                       b.CreateVector(shapes), b.CreateVector(names)));
    }
    std::vector<flatbuffers::Offset<fbs::Output>> outs;
    for (const auto& o : m.outputs)
        outs.push_back(fbs::CreateOutput(b, b.CreateString(o.name), o.var));
    fbs::FinishModelBuffer(
            b, fbs::CreateModel(b, m.version, 0, b.CreateVector(ins), b.CreateVector(cs),
                                b.CreateVector(ns), b.CreateVector(outs)));
    return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// Loading `m` fails with a ModelError whose message contains `what`.
void expect_error(const ModelSpec& m, const std::string& what) {
    try {
        load(build(m));
        ADD_FAILURE() << "loaded; expected an error with: " << what;
    } catch (const ModelError& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}

TEST(ModelFileErrors, TheBaseModelLoadsAndRuns) {
    auto loaded = load(build(ModelSpec{}));
    std::mt19937 rng(0);
    auto out = run_graph(*loaded.graph, loaded.output_vars(),
                         {{"x", host_values({2, 3}, dnn::dtype::Float32, {1, 2}, rng)}});
    std::vector<float> y(6);
    std::memcpy(y.data(), out[0].data(), 24);
    EXPECT_EQ(y, (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST(ModelFileErrors, VersionsNewerOrUnknown) {
    ModelSpec m;
    m.version = kFormatVersion + 1;
    EXPECT_THROW(load(build(m)), ModelVersionError);
    expect_error(m, "format version 2 is newer");
    m.version = 0;
    expect_error(m, "format version 0 is unknown");
    EXPECT_THROW(read_metadata(build(m)), ModelVersionError);
}

TEST(ModelFileErrors, NotAModel) {
    std::vector<uint8_t> junk{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!'};
    EXPECT_THROW(load(junk), ModelError);
    EXPECT_THROW(load(std::vector<uint8_t>{}), ModelError);
    auto bytes = build(ModelSpec{});
    bytes[4] = 'X';  // the identifier
    try {
        load(bytes);
        ADD_FAILURE();
    } catch (const ModelError& e) {
        EXPECT_NE(std::string(e.what()).find("not a NeoMeg model"), std::string::npos);
    }
}

TEST(ModelFileErrors, OperatorsAndParams) {
    ModelSpec m;
    m.nodes[0].type = "FrobnicateV9";
    expect_error(m, "unknown operator 'FrobnicateV9'");
    m = {};
    m.nodes[0].param_set = "Reduce";
    expect_error(m, "param set 'Reduce' is not the operator's (Elemwise)");
    m = {};
    m.nodes[0].params = {1, 2, 3, 4, 5, 6, 7};
    expect_error(m, "fail verification");
    m = {};
    m.nodes[0].params = elemwise_params(100000);
    expect_error(m, "out of range");
    m = {};
    m.nodes[0].inputs = {0, 1, 0, 1, 0};  // ADD with five inputs: the layout rule refuses
    expect_error(m, "node 0 (Elemwise)");
    m = {};
    m.nodes[0].type = m.nodes[0].param_set = "MatrixMul";
    m.nodes[0].params = {};
    // Elemwise's table read as MatrixMul's: a table's bytes carry no type, so the verifier
    // accepts them (safely), and the op they make must then fit its inputs.
    expect_error(m, "node 0 (MatrixMul)");
    m = {};
    m.nodes[0].num_outputs = 2;
    expect_error(m, "the file says 2 outputs");
    m = {};
    m.nodes[0].output_names = {"a", "b"};
    expect_error(m, "2 output names for 1 outputs");
    m = {};
    m.nodes[0].output_shapes = {{2, 3}, {2, 3}};
    expect_error(m, "2 output shapes for 1 outputs");
}

TEST(ModelFileErrors, ArityIsCheckedBeforeTheOpSeesItsInputs) {
    ModelSpec m;
    m.nodes[0].type = m.nodes[0].param_set = "MatrixMul";
    flatbuffers::FlatBufferBuilder b;
    b.Finish(fbs::param::CreateMatrixMul(b));
    m.nodes[0].params = {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
    m.nodes[0].inputs = {0};
    expect_error(m, "1 inputs, the operator takes 2");
    m.nodes[0].type = "BatchNormForward";
    m.nodes[0].param_set = "BatchNorm";
    b.Clear();
    b.Finish(fbs::param::CreateBatchNorm(b));
    m.nodes[0].params = {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
    expect_error(m, "1 inputs, the operator takes 5");
}

TEST(ModelFileErrors, VarIndices) {
    ModelSpec m;
    m.nodes[0].inputs = {0, 7};
    expect_error(m, "input var 7 is not defined before it");
    m = {};
    m.nodes.push_back(NodeSpec{});
    m.nodes[0].inputs = {0, 3};  // the second node's output, read before it exists
    expect_error(m, "input var 3 is not defined before it");
    m = {};
    m.outputs[0].var = 3;
    expect_error(m, "refers to var 3 of 3");
    m = {};
    m.outputs.clear();
    expect_error(m, "no outputs");
    m = {};
    m.outputs.push_back(OutputSpec{});
    expect_error(m, "empty or repeated");
}

TEST(ModelFileErrors, InputsShapesAndDtypes) {
    ModelSpec m;
    m.inputs[0].dtype = "float33";
    expect_error(m, "unknown dtype 'float33'");
    m = {};
    m.inputs[0].sample = {2, -3};
    expect_error(m, "has dimension 1 = -3");
    m = {};
    m.inputs[0].shape = {-1, 3};  // dynamic is fine in the declared shape ...
    EXPECT_NO_THROW(load(build(m)));
    m.inputs[0].sample = {-1, 3};  // ... never in the sample
    expect_error(m, "has dimension 0 = -1");
    m = {};
    m.inputs[0].shape = {2, 4};
    expect_error(m, "does not fit the declared one");
    m = {};
    m.inputs[0].shape = {2, 3, 1};
    expect_error(m, "differ in rank");
    m = {};
    m.inputs[0].shape = m.inputs[0].sample = {1, 1, 1, 1, 1, 1, 1, 1};
    expect_error(m, "more than 7");
    m = {};
    m.inputs[0].shape = m.inputs[0].sample = {int64_t(1) << 40, int64_t(1) << 40};
    expect_error(m, "too large");
    m = {};
    m.inputs.push_back(InputSpec{});
    expect_error(m, "repeated name");
    m = {};
    m.inputs[0].name = "";
    expect_error(m, "empty or repeated name");
}

TEST(ModelFileErrors, Constants) {
    ModelSpec m;
    m.consts[0].data.resize(11);
    expect_error(m, "needs 12 bytes, the file has 11");
    m = {};
    m.consts[0].data.resize(13);
    expect_error(m, "needs 12 bytes, the file has 13");
    m = {};
    m.consts[0].dtype = "complex128";  // complex64 is a dtype; complex128 is not
    expect_error(m, "unknown dtype 'complex128'");
    m = {};
    m.consts[0].shape = {int64_t(1) << 62, 4};
    expect_error(m, "too large");
    m = {};
    m.consts[0].dtype = "int32";  // a dtype Elemwise ADD refuses to mix
    expect_error(m, "node 0 (Elemwise)");
}

// The fuzzed model: a small net with a constant, a reshape, a matmul and a softmax.
std::vector<uint8_t> small_model() {
    ComputingGraph g;
    auto cn = graph::test::cpu();
    auto* x = g.input("x", {2, 4}, dnn::dtype::Float32, cn);
    auto* w = g.constant(graph::test::tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}), "w");
    auto* y = g.insert1(*make_op("MatrixMul"), {x, w});
    y = g.insert1(graph::test::elemwise(graph::test::Mode::RELU), {y});
    y = g.insert1(graph::test::reshape({4}), {y});
    y = g.insert1(*make_op("SoftmaxForward", {{"axis", int32_t(0)}}), {y});
    DumpOptions opt;
    opt.user_info = "fuzz";
    return dump(g, std::vector<NamedVar>{{"p", y}}, opt);
}

// Loads `bytes`; when it loads and its tensors are small, compiles and runs it too. Returns
// whether it loaded. Anything but a ModelError fails the test.
bool try_load(const std::vector<uint8_t>& bytes) {
    try {
        auto loaded = load(bytes);
        for (VarNode* v : loaded.graph->vars())
            if (v->dtype().size(v->shape().total_nr_elems()) > (1 << 20))
                return true;
        auto exe = loaded.graph->compile(loaded.output_vars());
        for (const auto& slot : exe->inputs()) {
            std::vector<uint8_t> zeros(slot.layout.dtype.size(slot.layout.total_nr_elems()));
            exe->set_input(slot.name, DeviceTensor::from_host(zeros.data(), slot.layout,
                                                              slot.layout.dtype, slot.comp_node));
        }
        exe->execute();
        return true;
    } catch (const ModelError&) {
        return false;
    } catch (const dnn::Error&) {
        // A file that loads may still describe a graph whose ops refuse to run (a kernel's
        // runtime check); that is an error too, and no crash.
        return true;
    }
}

TEST(ModelFileErrors, FuzzTruncationsFlipsAndRandomBytes) {
    auto model = small_model();
    ASSERT_TRUE(try_load(model));
    for (size_t n = 0; n < model.size(); ++n)
        EXPECT_FALSE(try_load({model.begin(), model.begin() + static_cast<ptrdiff_t>(n)}))
                << "truncated to " << n << " bytes";
    std::mt19937 rng(123);
    size_t loaded = 0;
    for (size_t i = 0; i < model.size(); ++i)
        for (uint8_t x :
             {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF), static_cast<uint8_t>(rng() | 1)}) {
            auto bad = model;
            bad[i] ^= x;
            loaded += try_load(bad);
        }
    // Most single flips land in data (weights, names, padding) and still load.
    EXPECT_GT(loaded, 0u);
    for (int k = 0; k < 2000; ++k) {
        std::vector<uint8_t> junk(rng() % 512);
        for (auto& c : junk)
            c = static_cast<uint8_t>(rng());
        if (junk.size() >= 8 && k % 2 == 0)
            std::memcpy(junk.data() + 4, "NMEG", 4);  // get past the identifier check
        try_load(junk);
    }
    // Random multi-byte corruption of a real model.
    for (int k = 0; k < 2000; ++k) {
        auto bad = model;
        for (int j = 0; j < 4; ++j)
            bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
        try_load(bad);
    }
}

}  // namespace
}  // namespace neomeg::serialization::test
