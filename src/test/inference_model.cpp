// The C++ inference API (neomeg/inference/model.h) on models written by serialization::dump, and
// the load_and_run command on one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "graph_test_util.h"
#include "neomeg/dnn/params/reduce.h"
#include "neomeg/inference/model.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/serialization/model_file.h"

namespace neomeg::inference::test {
namespace {

namespace gt = graph::test;

// y = softmax(x @ W + b, axis=1) with x {-1, 3} (a dynamic batch), W {3, 2}, b {1, 2}; and
// s = sum over axis 1 of x, an int32 cast of it as a second output.
std::vector<uint8_t> small_model() {
    graph::ComputingGraph g;
    auto cn = gt::cpu();
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, cn);
    auto* w = g.constant(gt::tensor({1, 0, 0, 1, 1, -1}, {3, 2}), "W");
    auto* b = g.constant(gt::tensor({0.5f, -0.5f}, {1, 2}), "b");
    auto* y = g.insert1(*make_op_def("MatrixMul"), {x, w});
    y = g.insert1(gt::elemwise(gt::Mode::ADD), {y, b});
    auto soft = make_op_def("SoftmaxForward");
    soft->set_param_field("axis", int32_t(1));
    y = g.insert1(*soft, {y});
    auto* s = g.insert1(gt::reduce(dnn::param::Reduce::Mode::SUM, 1), {x});
    auto cvt = make_op_def("TypeCvt");
    cvt->set_param_field("dtype", dnn::DTypeEnum::Int32);
    s = g.insert1(*cvt, {s});
    serialization::DumpOptions opt;
    opt.user_info = "inference test";
    opt.input_shapes["x"] = {-1, 3};
    return serialization::dump(g, std::vector<serialization::NamedVar>{{"prob", y}, {"rowsum", s}},
                               opt);
}

std::vector<float> expected_prob(const std::vector<float>& x) {
    std::vector<float> out;
    for (size_t r = 0; r < x.size() / 3; ++r) {
        const float* v = &x[3 * r];
        float l0 = v[0] + v[2] + 0.5f, l1 = v[1] - v[2] - 0.5f;
        float m = std::max(l0, l1), e0 = std::exp(l0 - m), e1 = std::exp(l1 - m);
        out.push_back(e0 / (e0 + e1));
        out.push_back(e1 / (e0 + e1));
    }
    return out;
}

void expect_prob(const Model& m, const std::vector<float>& x) {
    auto prob = m.output("prob");
    ASSERT_EQ(prob.dtype(), "float32");
    ASSERT_EQ(prob.shape(), (std::vector<int64_t>{static_cast<int64_t>(x.size() / 3), 2}));
    auto want = expected_prob(x);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(prob.data<float>()[i], want[i], 1e-5f) << i;
}

TEST(InferenceModel, DescribesRunsAndReadsOutputs) {
    auto bytes = small_model();
    Model m = Model::load(bytes);
    EXPECT_EQ(m.input_names(), std::vector<std::string>{"x"});
    EXPECT_EQ(m.output_names(), (std::vector<std::string>{"prob", "rowsum"}));
    EXPECT_EQ(m.inputs()[0].shape, (std::vector<int64_t>{-1, 3}));
    EXPECT_EQ(m.inputs()[0].dtype, "float32");
    EXPECT_EQ(m.input("x").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(m.outputs()[1].dtype, "int32");
    EXPECT_EQ(m.outputs()[1].shape, (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(m.user_info(), "inference test");
    EXPECT_EQ(m.producer(), std::string("NeoMeg ") + serialization::neomeg_version());
    EXPECT_EQ(m.format_version(), serialization::kFormatVersion);

    std::vector<float> x{1, 2, 3, -1, 0.5f, 2};
    m.set_input("x", x.data(), {2, 3});
    m.run();
    expect_prob(m, x);
    auto rowsum = m.output("rowsum");
    EXPECT_EQ(std::vector<int32_t>(rowsum.data<int32_t>(), rowsum.data<int32_t>() + 2),
              (std::vector<int32_t>{6, 1}));
    EXPECT_EQ(rowsum.to_doubles(), (std::vector<double>{6, 1}));

    // New values, same shape; then a new batch size (the dynamic dimension).
    x = {0, 0, 0, 5, -5, 1};
    m.set_input("x", x.data(), {2, 3});
    m.run();
    expect_prob(m, x);
    x = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, -1, -2, -3};
    m.set_input("x", HostTensor("float32", {5, 3},
                                {reinterpret_cast<std::byte*>(x.data()),
                                 reinterpret_cast<std::byte*>(x.data() + x.size())}));
    EXPECT_EQ(m.input("x").shape, (std::vector<int64_t>{5, 3}));
    EXPECT_EQ(m.outputs()[0].shape, (std::vector<int64_t>{5, 2}));
    m.run();
    expect_prob(m, x);
}

TEST(InferenceModel, LoadsFromAPath) {
    auto path = std::filesystem::temp_directory_path() /
                ("neomeg_inference_" + std::to_string(::getpid()) + ".nmeg");
    {
        auto bytes = small_model();
        std::ofstream(path, std::ios::binary)
                .write(reinterpret_cast<const char*>(bytes.data()),
                       static_cast<std::streamsize>(bytes.size()));
    }
    Model m = Model::load(path.string());
    EXPECT_EQ(m.output_names().size(), 2u);
    std::filesystem::remove(path);
    EXPECT_THROW(Model::load(path.string()), std::system_error);
}

TEST(InferenceModel, ErrorsHaveTheirDocumentedTypes) {
    Model m = Model::load(small_model());
    std::vector<float> x(12, 1.f);
    EXPECT_THROW(m.output("prob"), std::logic_error);  // before any run
    EXPECT_THROW(m.run(), std::invalid_argument);      // x not set
    EXPECT_THROW(m.set_input("y", x.data(), {2, 3}), std::out_of_range);
    EXPECT_THROW(m.input("y"), std::out_of_range);
    EXPECT_THROW(m.set_input("x", x.data(), {2, 4}), std::invalid_argument);  // fixed dim
    EXPECT_THROW(m.set_input("x", x.data(), {12}), std::invalid_argument);    // rank
    EXPECT_THROW(m.set_input("x", x.data(), {-2, 3}), std::invalid_argument);
    HostTensor ints("int32", {2, 3}, std::vector<std::byte>(24));
    EXPECT_THROW(m.set_input("x", ints), std::invalid_argument);
    EXPECT_THROW(ints.data<float>(), std::invalid_argument);
    EXPECT_THROW(HostTensor("float32", {2, 3}, std::vector<std::byte>(23)), std::invalid_argument);
    EXPECT_THROW(HostTensor("float64", {1}, std::vector<std::byte>(8)), std::invalid_argument);
    m.set_input("x", x.data(), {2, 3});
    m.run();
    EXPECT_THROW(m.output("nope"), std::out_of_range);

    auto bytes = small_model();
    bytes.resize(bytes.size() / 2);
    EXPECT_THROW(Model::load(bytes), ModelError);
    EXPECT_THROW(Model::load(small_model(), {.device = "tpu7"}), std::invalid_argument);
}

TEST(InferenceModel, ClonesRunOnThreadsOfTheirOwn) {
    Model base = Model::load(small_model());
    std::vector<Model> models;
    for (int t = 0; t < 3; ++t)
        models.push_back(base.clone());
    std::vector<std::thread> threads;
    std::vector<int> failures(models.size(), 0);
    for (size_t t = 0; t < models.size(); ++t)
        threads.emplace_back([&, t] {
            for (int it = 0; it < 50; ++it) {
                std::vector<float> x(3 * (1 + t));
                for (size_t i = 0; i < x.size(); ++i)
                    x[i] = static_cast<float>((i + t + it) % 7) - 3;
                models[t].set_input("x", x.data(), {static_cast<int64_t>(1 + t), 3});
                models[t].run();
                auto got = models[t].output("prob");
                auto want = expected_prob(x);
                for (size_t i = 0; i < want.size(); ++i)
                    failures[t] += std::fabs(got.data<float>()[i] - want[i]) > 1e-5f;
            }
        });
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(failures, std::vector<int>(models.size(), 0));
}

// ---- load_and_run ----

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(LoadAndRun, RunsAModelOnNpyInputsAndWritesOutputs) {
    auto dir = std::filesystem::temp_directory_path() /
               ("neomeg_load_and_run_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "out");
    auto model = small_model();
    std::ofstream(dir / "m.nmeg", std::ios::binary)
            .write(reinterpret_cast<const char*>(model.data()),
                   static_cast<std::streamsize>(model.size()));
    // x {3,3} float32 in NumPy's format 1.0, as np.save writes it.
    std::vector<float> x{1, 2, 3, 0, 0, 0, -1, 4, 0.5f};
    {
        std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }";
        header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
        header += '\n';
        std::ofstream f(dir / "x.npy", std::ios::binary);
        f.write("\x93NUMPY\x01\x00", 8);
        char len[2] = {static_cast<char>(header.size()), 0};
        f.write(len, 2);
        f << header;
        f.write(reinterpret_cast<const char*>(x.data()), 36);
    }
    std::string cmd = std::string(NEOMEG_LOAD_AND_RUN) + " " + (dir / "m.nmeg").string() +
                      " --input x=" + (dir / "x.npy").string() + " --iters 3 --output-dir " +
                      (dir / "out").string() + " > " + (dir / "log.txt").string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << read_text(dir / "log.txt");
    std::string log = read_text(dir / "log.txt");
    EXPECT_NE(log.find("output prob: (3, 2) float32"), std::string::npos) << log;
    EXPECT_NE(log.find("output rowsum: (3, 1) int32 min 0 max 6"), std::string::npos) << log;
    EXPECT_NE(log.find("user_info: inference test"), std::string::npos) << log;
    EXPECT_NE(log.find("time per run over 3 runs"), std::string::npos) << log;

    // The written output: a .npy whose data are the probabilities.
    std::string npy = read_text(dir / "out" / "prob.npy");
    ASSERT_GT(npy.size(), 24u);
    EXPECT_NE(npy.find("'shape': (3, 2)"), std::string::npos);
    std::vector<float> prob(6);
    std::memcpy(prob.data(), npy.data() + npy.size() - 24, 24);
    auto want = expected_prob(x);
    for (size_t i = 0; i < 6; ++i)
        EXPECT_NEAR(prob[i], want[i], 1e-5f);

    // Random inputs with a chosen dynamic shape; errors exit non-zero with a message.
    auto run = [&](const std::string& args) {
        return std::system((std::string(NEOMEG_LOAD_AND_RUN) + " " + args + " > " +
                            (dir / "log.txt").string() + " 2>&1")
                                   .c_str());
    };
    EXPECT_EQ(run((dir / "m.nmeg").string() + " --input-shape x=4,3 --iters 2"), 0);
    EXPECT_NE(read_text(dir / "log.txt").find("output prob: (4, 2)"), std::string::npos);
    EXPECT_NE(run((dir / "m.nmeg").string() + " --input-shape x=4,5"), 0);
    EXPECT_NE(read_text(dir / "log.txt").find("does not fit its declared shape"),
              std::string::npos);
    EXPECT_NE(run((dir / "m.nmeg").string() + " --input nope=" + (dir / "x.npy").string()), 0);
    EXPECT_NE(read_text(dir / "log.txt").find("no input named 'nope'"), std::string::npos);
    EXPECT_NE(run((dir / "x.npy").string()), 0);  // not a model
    EXPECT_NE(read_text(dir / "log.txt").find("not a NeoMeg model"), std::string::npos);
    EXPECT_NE(run("--iters"), 0);
    EXPECT_NE(read_text(dir / "log.txt").find("usage:"), std::string::npos);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace neomeg::inference::test
