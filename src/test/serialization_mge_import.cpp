// MegEngine's own model files (src/test/fixtures/mge/*.mge, written by the real MegEngine 1.13's
// trace.dump: make_mge_models.py) load through the ordinary load path and give MegEngine's
// outputs on the saved inputs; damaged or hostile files are ModelErrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "neomeg/inference/model.h"
#include "neomeg/serialization/mge_schema_generated.h"
#include "neomeg/serialization/model_file.h"

namespace neomeg::serialization {
namespace {

using inference::HostTensor;
namespace fs = std::filesystem;
namespace fbs = mge::fbs;

const fs::path kDir = fs::path(NEOMEG_TEST_FIXTURES) / "mge";

std::vector<uint8_t> read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    EXPECT_TRUE(in) << p;
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
T le(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// One .npy (NumPy's format 1.0, little-endian, C order) from memory.
HostTensor parse_npy(const uint8_t* p, size_t size) {
    EXPECT_GE(size, 10u);
    EXPECT_EQ(std::memcmp(p, "\x93NUMPY", 6), 0);
    size_t hlen = p[6] == 1 ? le<uint16_t>(p + 8) : le<uint32_t>(p + 8);
    size_t start = p[6] == 1 ? 10 : 12;
    std::string header(reinterpret_cast<const char*>(p + start), hlen);
    auto field = [&](const std::string& key) {
        auto at = header.find("'" + key + "': ");
        EXPECT_NE(at, std::string::npos) << header;
        return header.substr(at + key.size() + 4);
    };
    std::string descr = field("descr").substr(1, 3);
    static const std::map<std::string, std::string> kDtypes{{"<f4", "float32"}, {"<f2", "float16"},
                                                            {"<i4", "int32"},   {"|b1", "bool"},
                                                            {"|u1", "uint8"},   {"|i1", "int8"}};
    EXPECT_TRUE(kDtypes.count(descr)) << descr;
    EXPECT_EQ(field("fortran_order").substr(0, 5), "False");
    std::string shape_text = field("shape");
    shape_text = shape_text.substr(1, shape_text.find(')') - 1);
    std::vector<int64_t> shape;
    std::stringstream ss(shape_text);
    for (std::string d; std::getline(ss, d, ',');)
        if (d.find_first_not_of(' ') != std::string::npos)
            shape.push_back(std::stoll(d));
    const auto* data = reinterpret_cast<const std::byte*>(p + start + hlen);
    return HostTensor(kDtypes.at(descr), shape,
                      std::vector<std::byte>(data, reinterpret_cast<const std::byte*>(p + size)));
}

// np.savez's archive: stored (uncompressed) zip members, sizes in a zip64 extra field.
std::map<std::string, HostTensor> read_npz(const fs::path& path) {
    auto bytes = read_bytes(path);
    std::map<std::string, HostTensor> out;
    size_t at = 0;
    while (at + 30 <= bytes.size() && le<uint32_t>(&bytes[at]) == 0x04034b50) {
        const uint8_t* h = &bytes[at];
        EXPECT_EQ(le<uint16_t>(h + 8), 0) << "compressed npz member";
        uint64_t size = le<uint32_t>(h + 18);
        size_t name_len = le<uint16_t>(h + 26), extra_len = le<uint16_t>(h + 28);
        std::string name(reinterpret_cast<const char*>(h + 30), name_len);
        const uint8_t* extra = h + 30 + name_len;
        for (size_t e = 0; e + 4 <= extra_len;) {
            uint16_t id = le<uint16_t>(extra + e), len = le<uint16_t>(extra + e + 2);
            if (id == 1 && size == 0xFFFFFFFF)
                size = le<uint64_t>(extra + e + 4);  // uncompressed size first
            e += 4 + len;
        }
        const uint8_t* data = extra + extra_len;
        name = name.substr(0, name.size() - 4);  // ".npy"
        out.emplace(name, parse_npy(data, size));
        at = static_cast<size_t>(data + size - bytes.data());
    }
    EXPECT_FALSE(out.empty()) << path;
    return out;
}

// MegEngine's outputs: within 1e-5 relative (and 1e-6 absolute, for values near zero), the
// rounding of float32 kernels that sum in another order.
void expect_close(const HostTensor& got, const HostTensor& want, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    auto g = got.to_doubles(), w = want.to_doubles();
    size_t bad = 0;
    for (size_t i = 0; i < g.size(); ++i)
        if (!(std::abs(g[i] - w[i]) <= 1e-6 + 1e-5 * std::abs(w[i])) && bad++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: " << g[i] << " vs MegEngine's " << w[i];
}

// A quantized output of MegEngine's: its dtype, with the scale and zero point the npz holds beside
// it (qdtype_NAME: float32 [scale, zero point]), and the same integers, exactly.
void expect_same_quantized(const HostTensor& got, const HostTensor& want, const HostTensor& qdtype,
                           const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    dnn::DType dt = dnn::DType::from_name(got.dtype());
    ASSERT_TRUE(dt.is_quantized()) << what << ": " << got.dtype();
    EXPECT_EQ(dt.storage().name(), want.dtype()) << what;
    const float* q = qdtype.data<float>();
    EXPECT_EQ(dt.scale(), q[0]) << what << ": " << got.dtype();
    EXPECT_EQ(dt.zero_point(), static_cast<int32_t>(q[1])) << what << ": " << got.dtype();
    auto g = got.to_doubles(), w = want.to_doubles();
    size_t bad = 0;
    for (size_t i = 0; i < g.size(); ++i)
        if (g[i] != w[i] && bad++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: " << g[i] << " vs MegEngine's " << w[i];
}

class MegEngineModels : public ::testing::TestWithParam<std::string> {};

TEST_P(MegEngineModels, GiveMegEnginesOutputs) {
    std::string name = GetParam();
    std::string stem = name.substr(0, name.find('.'));
    auto data = read_npz(kDir / (stem + ".npz"));
    auto model = inference::Model::load((kDir / (name + ".mge")).string());
    EXPECT_EQ(model.producer().rfind("MegEngine", 0), 0u) << model.producer();
    size_t n_in = 0, n_out = 0;
    for (const auto& in : model.inputs()) {
        model.set_input(in.name, data.at("in_" + in.name));
        ++n_in;
    }
    model.run();
    for (const auto& out : model.outputs()) {
        const std::string what = name + ":" + out.name;
        if (auto q = data.find("qdtype_" + out.name); q != data.end())
            expect_same_quantized(model.output(out.name), data.at("out_" + out.name), q->second,
                                  what);
        else
            expect_close(model.output(out.name), data.at("out_" + out.name), what);
        ++n_out;
    }
    size_t want_in = 0, want_out = 0;
    for (const auto& [k, v] : data) {
        want_in += k.rfind("in_", 0) == 0;
        want_out += k.rfind("out_", 0) == 0;
    }
    EXPECT_EQ(n_in, want_in);
    EXPECT_EQ(n_out, want_out);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MegEngineModels,
                         ::testing::Values("linear", "linear.noopt", "conv_bn_relu",
                                           "conv_bn_relu.noopt", "resnet_tiny", "resnet_tiny.noopt",
                                           "shapes", "shapes.noopt", "elemwise", "elemwise.noopt",
                                           "reduce", "reduce.noopt", "pooling", "pooling.noopt",
                                           "typecvt", "typecvt.noopt", "extras", "extras.noopt",
                                           "extras.fuse", "resample", "resample.noopt", "quant_cnn",
                                           "quant_cnn.noopt", "quant_cnn.fuse", "quant_asymm",
                                           "quant_asymm.noopt", "generators", "deconv",
                                           "deconv.noopt", "conv_bias_bn", "conv_bias_bn.noopt",
                                           "topk", "topk.noopt", "roi", "roi.noopt", "prefix",
                                           "prefix.noopt", "nms", "nms.noopt"),
                         [](const auto& p) {
                             std::string n = p.param;
                             std::replace(n.begin(), n.end(), '.', '_');
                             return n;
                         });

TEST(MegEngineModel, BatchSizeCanChange) {
    // A MegEngine graph takes other input shapes: every dimension is free.
    auto model = inference::Model::load((kDir / "resnet_tiny.mge").string());
    EXPECT_EQ(model.inputs()[0].shape, (std::vector<int64_t>{-1, -1, -1, -1}));
    std::vector<float> x(5 * 3 * 32 * 32, 0.25f);
    model.set_input("data", x.data(), std::vector<int64_t>{5, 3, 32, 32});
    model.run();
    EXPECT_EQ(model.output("out").shape(), (std::vector<int64_t>{5, 10}));
}

// The leading `rows` rows of a tensor (a view of its bytes as a new tensor).
HostTensor leading_rows(const HostTensor& t, int64_t rows) {
    std::vector<int64_t> shape = t.shape();
    size_t row_bytes = t.bytes().size() / static_cast<size_t>(shape[0]);
    shape[0] = rows;
    auto b = t.bytes().first(row_bytes * static_cast<size_t>(rows));
    return HostTensor(t.dtype(), shape, std::vector<std::byte>(b.begin(), b.end()));
}

TEST(MegEngineModel, RoiCountCanChange) {
    // The number of rois is an input's shape, free at run time (a detector's proposals): each
    // output row depends on its roi alone, so fewer rois give MegEngine's leading rows.
    auto data = read_npz(kDir / "roi.npz");
    for (const char* name : {"roi.mge", "roi.noopt.mge"}) {
        auto model = inference::Model::load((kDir / name).string());
        model.set_input("x", data.at("in_x"));
        for (int64_t k : {2, 1}) {
            model.set_input("rois", leading_rows(data.at("in_rois"), k));
            model.run();
            for (const auto& out : model.outputs())
                expect_close(model.output(out.name), leading_rows(data.at("out_" + out.name), k),
                             dnn::str_cat(name, ":", out.name, " of ", k, " rois"));
        }
    }
}

TEST(MegEngineModel, SliceEndComputedFromTheDataFollowsIt) {
    // prefix.mge: head = x[:n] * 2 and head_neg = x[:n - 4] + 1, n the rows whose first value
    // is positive; the output rows follow n when it runs. Python's slice gives the reference.
    for (const char* name : {"prefix.mge", "prefix.noopt.mge"}) {
        auto model = inference::Model::load((kDir / name).string());
        for (std::vector<float> lead : {std::vector<float>{1, 2, 3, 4, 5, 6, 7},
                                        {-1, -2, 3, -4, -5, -6, -7},
                                        {-1, -1, -1, -1, -1, -1, -1},
                                        {1, 1, 1, 1, 1, -1, -1}}) {
            const int64_t rows = static_cast<int64_t>(lead.size());
            std::vector<float> x;
            for (int64_t r = 0; r < rows; ++r)
                x.insert(x.end(), {lead[r], 0.5f * r, -0.25f * r});
            model.set_input("x", x.data(), std::vector<int64_t>{rows, 3});
            model.run();
            int64_t n = std::count_if(lead.begin(), lead.end(), [](float v) { return v > 0; });
            int64_t neg = std::clamp<int64_t>(n - 4 < 0 ? n - 4 + rows : n - 4, 0, rows);
            for (auto [out, len, scale, add] :
                 {std::tuple{"head", n, 2.f, 0.f}, std::tuple{"head_neg", neg, 1.f, 1.f}}) {
                const HostTensor& got = model.output(out);
                ASSERT_EQ(got.shape(), (std::vector<int64_t>{len, 3})) << name << ":" << out;
                for (int64_t i = 0; i < len * 3; ++i)
                    EXPECT_EQ(got.data<float>()[i], x[static_cast<size_t>(i)] * scale + add)
                            << name << ":" << out << "[" << i << "]";
            }
        }
    }
}

// Greedy NMS in double (IoU by division) over the boxes in descending score order, ties by
// index: the reference for F.vision.nms's graph on scores MegEngine did not see.
std::vector<int32_t> greedy_nms(const float* b, const std::vector<float>& scores, double thresh,
                                size_t cap) {
    std::vector<int32_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t i, int32_t j) { return scores[i] > scores[j]; });
    auto area = [&](int32_t i) {
        return double(b[4 * i + 2] - b[4 * i]) * double(b[4 * i + 3] - b[4 * i + 1]);
    };
    std::vector<int32_t> keep;
    for (int32_t i : order) {
        if (keep.size() == cap)
            break;
        bool drop = false;
        for (int32_t k : keep) {
            double w = std::min<double>(b[4 * i + 2], b[4 * k + 2]) -
                       std::max<double>(b[4 * i], b[4 * k]);
            double h = std::min<double>(b[4 * i + 3], b[4 * k + 3]) -
                       std::max<double>(b[4 * i + 1], b[4 * k + 1]);
            double inter = std::max(w, 0.0) * std::max(h, 0.0);
            double uni = area(i) + area(k) - inter;
            drop = drop || (uni > 0 && inter / uni > thresh);
        }
        if (!drop)
            keep.push_back(i);
    }
    return keep;
}

TEST(MegEngineModel, NmsFollowsTheScores) {
    // nms.mge: MegEngine's NMSKeep with its indices cut to the count it gives. Other scores
    // keep other boxes, as many as the data leaves: the output's length is known only when it
    // runs.
    auto data = read_npz(kDir / "nms.npz");
    const HostTensor& boxes = data.at("in_boxes");
    const float* b = boxes.data<float>();
    const size_t n = static_cast<size_t>(boxes.shape()[0]);
    std::mt19937 rng(3);
    for (const char* name : {"nms.mge", "nms.noopt.mge"}) {
        auto model = inference::Model::load((kDir / name).string());
        model.set_input("boxes", boxes);
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<float> scores(n);
            for (size_t i = 0; i < n; ++i)
                scores[i] = static_cast<float>(i) / static_cast<float>(n);
            std::shuffle(scores.begin(), scores.end(), rng);
            model.set_input("scores", scores.data(), std::vector<int64_t>{int64_t(n)});
            model.run();
            for (auto [out, thresh, cap] :
                 {std::tuple{"keep3", 0.5, size_t(3)}, std::tuple{"keep_all", 0.5, n},
                  std::tuple{"keep_tight", 0.1, size_t(40)}}) {
                auto want = greedy_nms(b, scores, thresh, cap);
                const HostTensor& got = model.output(out);
                ASSERT_EQ(got.shape(), (std::vector<int64_t>{int64_t(want.size())}))
                        << name << ":" << out;
                EXPECT_EQ(std::vector<int32_t>(got.data<int32_t>(),
                                               got.data<int32_t>() + want.size()),
                          want)
                        << name << ":" << out << " trial " << trial;
            }
        }
    }
}

TEST(MegEngineModel, OlderFbsFormatIsRefusedWithAMessage) {
    auto bytes = read_bytes(kDir / "linear.fbs1.mge");
    try {
        load(bytes);
        FAIL() << "loaded an FBS (v1) file";
    } catch (const ModelError& e) {
        EXPECT_NE(std::string(e.what()).find("dump_format"), std::string::npos) << e.what();
    }
}

// A layout the import does not convert is refused naming MegEngine's operator and the param.
TEST(MegEngineModel, NhwcWarpIsRefusedWithAMessage) {
    try {
        load(read_bytes(kDir / "warp_nhwc.mge"));
        FAIL() << "loaded an NHWC WarpPerspective";
    } catch (const ModelError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("WarpPerspective"), std::string::npos) << what;
        EXPECT_NE(what.find("format 1; NeoMeg imports NCHW"), std::string::npos) << what;
    }
}

TEST(MegEngineModel, MetadataNamesMegEngine) {
    auto md = read_metadata(read_bytes(kDir / "linear.mge"));
    EXPECT_EQ(md.producer_name, "MegEngine");
    EXPECT_EQ(md.format_version, 2u);
    EXPECT_EQ(md.producer_version, "MGB_VERSION 101300");
}

// MegEngine's int8 CNN: the quantized dtypes come through with their parameters (QuantStub's
// TypeCvt target, each ConvBias's and ElemwiseMultiType's output dtype), and load_and_run runs it.
TEST(MegEngineModel, QuantizedModelKeepsMegEnginesDtypes) {
    auto model = inference::Model::load((kDir / "quant_cnn.mge").string());
    std::map<std::string, std::string> dtypes;
    for (const auto& o : model.outputs())
        dtypes[o.name] = o.dtype;
    EXPECT_EQ(dtypes.at("out"), "float32");
    EXPECT_EQ(dtypes.at("conv").rfind("QuantizedS8(", 0), 0u) << dtypes.at("conv");
    EXPECT_EQ(dtypes.at("feat").rfind("QuantizedS8(", 0), 0u) << dtypes.at("feat");
    auto asymm = inference::Model::load((kDir / "quant_asymm.mge").string());
    for (const auto& o : asymm.outputs())
        EXPECT_EQ(o.dtype.rfind(o.name == "out" ? "float32" : "Quantized8Asymm(", 0), 0u)
                << o.dtype;
}

// A convolution of asymmetric (Quantized8Asymm) weights, which MegEngine writes for a quint8
// qconfig: NeoMeg's quantized ConvBias takes QuantizedS8 filters, so the import says so.
TEST(MegEngineModel, AsymmetricWeightsAreRefusedWithAMessage) {
    try {
        load(read_bytes(kDir / "quant_asymm_conv.mge"));
        FAIL() << "loaded a convolution of Quantized8Asymm weights";
    } catch (const ModelError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("ConvBias"), std::string::npos) << what;
        EXPECT_NE(what.find("filter dtype Quantized8Asymm("), std::string::npos) << what;
    }
}

// Loads `bytes`; when it loads and its tensors are small, compiles and runs it on zeros too.
// Returns whether it loaded. Anything but a ModelError (or, from a graph that loaded, a dnn
// error of an op that refuses to run) fails the test.
bool try_load(const std::vector<uint8_t>& bytes) {
    try {
        auto loaded = load(bytes);
        for (graph::VarNode* v : loaded.graph->vars())
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
        return true;
    }
}

// Every truncation is a ModelError, and every single-byte corruption an error or a model that
// runs: never a crash, never another exception.
TEST(MegEngineModel, TruncatedAndCorruptedFilesAreModelErrors) {
    for (const char* name : {"linear.mge", "conv_bn_relu.mge", "quant_cnn.mge"}) {
        auto good = read_bytes(kDir / name);
        ASSERT_TRUE(try_load(good));
        for (size_t n = 0; n < good.size(); n += (good.size() < 4000 ? 1 : 7))
            EXPECT_FALSE(try_load({good.begin(), good.begin() + static_cast<ptrdiff_t>(n)}))
                    << name << " cut to " << n << " bytes";
        size_t loaded = 0, tried = 0;
        for (size_t i = 0; i < good.size(); i += (good.size() < 4000 ? 1 : 5))
            for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
                auto bad = good;
                bad[i] ^= flip;
                loaded += try_load(bad);
                ++tried;
            }
        // Damage to a weight's bytes leaves a valid model; damage to the structure does not.
        EXPECT_GT(loaded, 0u) << name;
        EXPECT_LT(loaded, tried) << name;
    }
}

// ---- files built here, for what MegEngine would not write ----

struct Builder {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<fbs::Operator>> oprs;
    uint32_t next_var = 0;

    flatbuffers::Offset<fbs::Tensor> tensor(const char* name, std::vector<uint32_t> shape,
                                            const std::vector<float>* data) {
        auto dt = fbs::CreateDType(fbb, fbs::DTypeEnum::Float32);
        auto sh = fbb.CreateVector(shape);
        auto nm = name ? fbb.CreateString(name) : 0;
        flatbuffers::Offset<flatbuffers::Vector<uint8_t>> d;
        if (data)
            d = fbb.CreateVector(reinterpret_cast<const uint8_t*>(data->data()), data->size() * 4);
        return fbs::CreateTensor(fbb, nm, sh, 0, dt, fbs::TensorFormat::NONE, 0, d);
    }
    uint32_t input(const char* name, std::vector<uint32_t> shape) {
        auto t = tensor(name, std::move(shape), nullptr);
        return add("Host2DeviceCopy", {}, fbs::OperatorParam::NONE, 0, {t});
    }
    // A dtype table: `type` with a LinearQuantizationParam when `scale` is given.
    flatbuffers::Offset<fbs::DType> dtype(fbs::DTypeEnum type, std::optional<float> scale = {},
                                          uint8_t zero_point = 0) {
        if (!scale)
            return fbs::CreateDType(fbb, type);
        auto q = fbs::CreateLinearQuantizationParam(fbb, *scale, zero_point);
        return fbs::CreateDType(fbb, type, fbs::DTypeParam::LinearQuantizationParam, q.Union());
    }
    // A tensor of dtype `dt` holding `bytes` (an input where `bytes` is null).
    flatbuffers::Offset<fbs::Tensor> typed_tensor(const char* name, std::vector<uint32_t> shape,
                                                  flatbuffers::Offset<fbs::DType> dt,
                                                  const std::vector<uint8_t>* bytes) {
        auto sh = fbb.CreateVector(shape);
        auto nm = name ? fbb.CreateString(name) : 0;
        flatbuffers::Offset<flatbuffers::Vector<uint8_t>> d;
        if (bytes)
            d = fbb.CreateVector(*bytes);
        return fbs::CreateTensor(fbb, nm, sh, 0, dt, fbs::TensorFormat::NONE, 0, d);
    }
    uint32_t typed_input(const char* name, std::vector<uint32_t> shape,
                         flatbuffers::Offset<fbs::DType> dt) {
        auto t = typed_tensor(name, std::move(shape), dt, nullptr);
        return add("Host2DeviceCopy", {}, fbs::OperatorParam::NONE, 0, {t});
    }
    uint32_t add(const char* type, std::vector<uint32_t> inputs, fbs::OperatorParam pt,
                 flatbuffers::Offset<void> param,
                 std::vector<flatbuffers::Offset<fbs::Tensor>> tensors = {},
                 flatbuffers::Offset<fbs::DType> output_dtype = 0) {
        auto ty = fbb.CreateString(type);
        auto in = fbb.CreateVector(inputs);
        auto out = fbb.CreateVector(std::vector<uint32_t>{next_var});
        auto ts = tensors.empty() ? 0 : fbb.CreateVector(tensors);
        fbs::OperatorBuilder b(fbb);
        b.add_type(ty);
        b.add_inputs(in);
        b.add_outputs(out);
        b.add_param_type(pt);
        if (pt != fbs::OperatorParam::NONE)
            b.add_param(param);
        if (!tensors.empty())
            b.add_tensors(ts);
        if (!output_dtype.IsNull())
            b.add_output_dtype(output_dtype);
        oprs.push_back(b.Finish());
        return next_var++;
    }
    std::vector<uint8_t> finish(uint32_t output, uint32_t model_version = 2) {
        auto o = fbb.CreateVector(oprs);
        std::vector<fbs::OutputVar> outs_raw;
        auto outs = fbb.CreateVector(std::vector<flatbuffers::Offset<fbs::OutputVar>>{
                fbs::CreateOutputVar(fbb, output, 0)});
        (void)outs_raw;
        fbs::ModelBuilder m(fbb);
        m.add_model_version(model_version);
        m.add_mge_version(101300);
        m.add_oprs(o);
        m.add_output_vars_idx(outs);
        fbb.FinishSizePrefixed(m.Finish(), fbs::ModelIdentifier());
        return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
    }
};

std::string load_error(const std::vector<uint8_t>& bytes) {
    try {
        load(bytes);
    } catch (const ModelError& e) {
        return e.what();
    }
    return "(loaded)";
}

TEST(MegEngineModel, UnknownOperatorIsNamed) {
    Builder b;
    uint32_t x = b.input("x", {2, 3});
    uint32_t y = b.add("WarpAffine", {x}, fbs::OperatorParam::NONE, 0);
    auto err = load_error(b.finish(y));
    EXPECT_NE(err.find("WarpAffine"), std::string::npos) << err;
}

TEST(MegEngineModel, RoiParamsNeoMegLacksAreRefusedByName) {
    auto roi_align_error = [](uint32_t mode, uint32_t format, uint32_t sample_h) {
        Builder b;
        uint32_t x = b.input("x", {1, 2, 6, 6});
        uint32_t r = b.input("rois", {3, 5});
        auto p = fbs::CreateROIAlign(b.fbb, mode, format, 1.f, 0.f, 2, 2, sample_h, 2);
        return load_error(
                b.finish(b.add("ROIAlignV1", {x, r}, fbs::OperatorParam::ROIAlign, p.Union())));
    };
    std::string err = roi_align_error(0, 0, 0);  // MegEngine's dense sampling
    EXPECT_NE(err.find("ROIAlignV1"), std::string::npos) << err;
    EXPECT_NE(err.find("dense sampling"), std::string::npos) << err;
    err = roi_align_error(2, 0, 2);
    EXPECT_NE(err.find("ROIAlign mode 2"), std::string::npos) << err;
    err = roi_align_error(1, 1, 2);  // NHWC
    EXPECT_NE(err.find("ROIAlign format 1"), std::string::npos) << err;
    {
        Builder b;  // a mode MegEngine does not have
        uint32_t x = b.input("x", {1, 2, 6, 6});
        uint32_t r = b.input("rois", {3, 5});
        std::vector<float> size{2, 2};
        uint32_t s = b.add("ImmutableTensor", {}, fbs::OperatorParam::NONE, 0,
                           {b.tensor(nullptr, {2}, &size)});
        auto p = fbs::CreateROIPooling(b.fbb, 7, 1.f);
        err = load_error(b.finish(
                b.add("ROIPooling", {x, r, s}, fbs::OperatorParam::ROIPooling, p.Union())));
        EXPECT_NE(err.find("ROIPooling mode 7"), std::string::npos) << err;
    }
    {
        Builder b;  // an output size that is not a constant of the file
        uint32_t x = b.input("x", {1, 2, 6, 6});
        uint32_t r = b.input("rois", {3, 5});
        uint32_t s = b.input("size", {2});
        auto p = fbs::CreateROIPooling(b.fbb, 0, 1.f);
        err = load_error(b.finish(
                b.add("ROIPooling", {x, r, s}, fbs::OperatorParam::ROIPooling, p.Union())));
        EXPECT_NE(err.find("not two values known"), std::string::npos) << err;
    }
}

TEST(MegEngineModel, InconsistentFilesAreModelErrors) {
    {
        // A param type whose table the file lacks (the fuzzer's find: TypeCvt read it unchecked).
        Builder b;
        uint32_t x = b.input("x", {2, 3});
        uint32_t y = b.add("TypeCvt", {x}, fbs::OperatorParam::DType, 0);
        std::string err = load_error(b.finish(y));
        EXPECT_NE(err.find("expected param DType"), std::string::npos) << err;
    }
    {
        Builder b;  // an input var used before it exists
        b.input("x", {2, 3});
        uint32_t y = b.add("Elemwise", {5}, fbs::OperatorParam::Elemwise,
                           fbs::CreateElemwise(b.fbb, 0).Union());
        EXPECT_NE(load_error(b.finish(y)).find("not defined before"), std::string::npos);
    }
    {
        Builder b;  // an Elemwise mode number MegEngine does not have
        uint32_t x = b.input("x", {2, 3});
        uint32_t y = b.add("Elemwise", {x}, fbs::OperatorParam::Elemwise,
                           fbs::CreateElemwise(b.fbb, 999).Union());
        EXPECT_NE(load_error(b.finish(y)).find("Elemwise mode 999"), std::string::npos);
    }
    {
        Builder b;  // a param of another operator
        uint32_t x = b.input("x", {2, 3});
        uint32_t y =
                b.add("Elemwise", {x}, fbs::OperatorParam::Axis, fbs::CreateAxis(b.fbb, 0).Union());
        EXPECT_NE(load_error(b.finish(y)).find("expected param Elemwise"), std::string::npos);
    }
    {
        Builder b;  // weights shorter than their shape
        std::vector<float> w(5);
        auto t = b.tensor(nullptr, {2, 3}, &w);
        uint32_t c = b.add("ImmutableTensor", {}, fbs::OperatorParam::NONE, 0, {t});
        EXPECT_NE(load_error(b.finish(c)).find("needs 24 bytes, the file has 20"),
                  std::string::npos);
    }
    {
        Builder b;  // a binary Elemwise on shapes that do not broadcast
        uint32_t x = b.input("x", {2, 3});
        uint32_t z = b.input("z", {4});
        uint32_t y = b.add("Elemwise", {x, z}, fbs::OperatorParam::Elemwise,
                           fbs::CreateElemwise(b.fbb, 16).Union());
        EXPECT_NE(load_error(b.finish(y)).find("Elemwise"), std::string::npos);
    }
    {
        Builder b;  // a name that is not text
        uint32_t x = b.input("x\xff", {2, 3});
        EXPECT_NE(load_error(b.finish(x)).find("not valid UTF-8"), std::string::npos);
    }
    {
        Builder b;  // a model version from the future
        uint32_t x = b.input("x", {2, 3});
        EXPECT_THROW(load(b.finish(x, 3)), ModelVersionError);
    }
    {
        // Subtensor items that the view op's layout rule rejects: an index out of range, a
        // slice step of 0.
        struct Bad {
            fbs::IndexDescMaskItem item;
            int32_t value;
            const char* error;
        };
        for (const Bad& bad : {Bad{fbs::IndexDescMaskItem(0, false, false, false, true), 7,
                                   "index 7 is out of bounds for axis 0 with size 4"},
                               Bad{fbs::IndexDescMaskItem(0, false, false, true, false), 0,
                                   "slice step cannot be zero"}}) {
            Builder b;
            uint32_t x = b.input("x", {4});
            auto idx = b.fbb.CreateVectorOfStructs(std::vector<fbs::IndexDescMaskItem>{bad.item});
            auto dt = fbs::CreateDType(b.fbb, fbs::DTypeEnum::Int32);
            auto sh = b.fbb.CreateVector(std::vector<uint32_t>{1});
            auto d = b.fbb.CreateVector(reinterpret_cast<const uint8_t*>(&bad.value), 4);
            auto t = fbs::CreateTensor(b.fbb, 0, sh, 0, dt, fbs::TensorFormat::NONE, 0, d);
            uint32_t c = b.add("ImmutableTensor", {}, fbs::OperatorParam::NONE, 0, {t});
            uint32_t y = b.add("Subtensor", {x, c}, fbs::OperatorParam::IndexDescMaskDump,
                               fbs::CreateIndexDescMaskDump(b.fbb, idx).Union());
            EXPECT_NE(load_error(b.finish(y)).find(bad.error), std::string::npos)
                    << load_error(b.finish(y));
        }
    }
}

// A Subtensor whose indices and slice bounds are constants is one Subtensor view op (its layout
// rule resolves them as Python's): x[-1, 4::-2] of a 3x5 is row 2's columns 4, 2, 0.
TEST(MegEngineModel, StaticSubtensorIsOneViewOp) {
    Builder b;
    uint32_t x = b.input("x", {3, 5});
    auto constant = [&](int32_t v) {
        auto dt = fbs::CreateDType(b.fbb, fbs::DTypeEnum::Int32);
        auto sh = b.fbb.CreateVector(std::vector<uint32_t>{1});
        auto d = b.fbb.CreateVector(reinterpret_cast<const uint8_t*>(&v), 4);
        auto t = fbs::CreateTensor(b.fbb, 0, sh, 0, dt, fbs::TensorFormat::NONE, 0, d);
        return b.add("ImmutableTensor", {}, fbs::OperatorParam::NONE, 0, {t});
    };
    // Inputs after x: item by item, its begin, end, step and idx where flagged.
    uint32_t idx = constant(-1), begin = constant(4), step = constant(-2);
    auto items = b.fbb.CreateVectorOfStructs(std::vector<fbs::IndexDescMaskItem>{
            fbs::IndexDescMaskItem(0, false, false, false, true),
            fbs::IndexDescMaskItem(1, true, false, true, false)});
    uint32_t y = b.add("Subtensor", {x, idx, begin, step}, fbs::OperatorParam::IndexDescMaskDump,
                       fbs::CreateIndexDescMaskDump(b.fbb, items).Union());
    auto bytes = b.finish(y);
    auto loaded = load(bytes);
    ASSERT_EQ(loaded.outputs.size(), 1u);
    EXPECT_STREQ(loaded.output_vars()[0]->owner()->op().name(), "Subtensor");
    auto model = inference::Model::load(std::span<const uint8_t>(bytes));
    std::vector<float> xv(15);
    std::iota(xv.begin(), xv.end(), 0.f);
    model.set_input("x", xv.data(), std::vector<int64_t>{3, 5});
    model.run();
    const HostTensor& got = model.output(model.output_names().at(0));
    ASSERT_EQ(got.shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(std::vector<float>(got.data<float>(), got.data<float>() + 3),
              (std::vector<float>{14, 12, 10}));
}

// Quantized tensors whose dtype table or data does not fit are ModelErrors naming the tensor and
// the dtype.
TEST(MegEngineModel, BadQuantizedTensorsAreModelErrors) {
    auto constant_error = [](auto make_dtype, size_t n_bytes) {
        Builder b;
        std::vector<uint8_t> data(n_bytes);
        auto t = b.typed_tensor("w", {2, 3}, make_dtype(b), &data);
        return load_error(b.finish(b.add("ImmutableTensor", {}, fbs::OperatorParam::NONE, 0, {t})));
    };
    using E = fbs::DTypeEnum;
    auto s8 = [](Builder& b) { return b.dtype(E::QuantizedS8, 0.5f); };
    // data of another size than the shape's elements
    EXPECT_NE(constant_error(s8, 5).find("6 bytes, the file has 5"), std::string::npos)
            << constant_error(s8, 5);
    EXPECT_NE(constant_error(s8, 5).find("QuantizedS8"), std::string::npos);
    auto s32 = [](Builder& b) { return b.dtype(E::QuantizedS32, 0.25f); };
    EXPECT_NE(constant_error(s32, 6).find("needs 24 bytes, the file has 6"), std::string::npos);
    EXPECT_EQ(constant_error(s32, 24), "(loaded)");
    // a quantized type NeoMeg has no counterpart of, named
    auto s4 = [](Builder& b) { return b.dtype(E::QuantizedS4, 0.5f); };
    EXPECT_NE(constant_error(s4, 6).find("is QuantizedS4; NeoMeg imports"), std::string::npos)
            << constant_error(s4, 6);
    auto s16 = [](Builder& b) { return b.dtype(E::QuantizedS16, 0.5f); };
    EXPECT_NE(constant_error(s16, 12).find("QuantizedS16"), std::string::npos);
    // a quantized type without its param, a plain one with a param, a scale that is no scale
    auto bare = [](Builder& b) { return b.dtype(E::QuantizedS8); };
    EXPECT_NE(constant_error(bare, 6).find("QuantizedS8 without its scale"), std::string::npos);
    auto plain = [](Builder& b) { return b.dtype(E::Int8, 0.5f); };
    EXPECT_NE(constant_error(plain, 6).find("Int8 with a quantization param"), std::string::npos);
    for (float scale : {0.0f, -1.0f, std::nanf(""), INFINITY}) {
        auto bad = [scale](Builder& b) { return b.dtype(E::QuantizedS8, scale); };
        EXPECT_NE(constant_error(bad, 6).find("finite and positive"), std::string::npos) << scale;
    }
    auto zp = [](Builder& b) { return b.dtype(E::QuantizedS8, 0.5f, 3); };
    EXPECT_NE(constant_error(zp, 6).find("zero point 3"), std::string::npos);
    {
        Builder b;  // a quantized input reads as the dtype with its parameters
        uint32_t x = b.typed_input("x", {2}, b.dtype(E::Quantized8Asymm, 0.5f, 128));
        auto loaded = load(b.finish(x));
        EXPECT_EQ(loaded.inputs.at(0).var->dtype(), dnn::DType::quantized_8asymm(0.5f, 128));
    }
}

// The quantized ElemwiseMultiType modes against their definition: each input's value
// scale * (v - zero point), the float function, rounded half away from zero to the output
// dtype and saturated.
TEST(MegEngineModel, ElemwiseMultiTypeModesComputeOnValues) {
    using E = fbs::DTypeEnum;
    const std::vector<int8_t> a{-128, -37, -5, -1, 0, 1, 3, 9, 50, 127};
    const std::vector<uint8_t> b{0, 17, 90, 127, 128, 129, 140, 200, 230, 255};
    const float sa = 0.05f, sb = 0.03f, so = 0.04f;
    const int zb = 128;
    struct Case {
        uint32_t mode;
        float (*f)(float, float);
    };
    const Case cases[] = {
            {6, [](float x, float y) { return x + y; }},                        // QADD
            {7, [](float x, float y) { return std::max(x + y, 0.0f); }},        // QFUSE_ADD_RELU
            {8, [](float x, float y) { return x * y; }},                        // QMUL
            {9, [](float x, float y) { return std::min(x, y); }},               // QMIN
            {10, [](float x, float y) { return std::max(x, y); }},              // QMAX
            {11, [](float x, float y) { return x - y; }},                       // QSUB
            {13, [](float x, float y) { return 1 / (1 + std::exp(-x - y)); }},  // QFUSE_ADD_SIGMOID
            {14, [](float x, float y) { return std::tanh(x + y); }},            // QFUSE_ADD_TANH
    };
    for (const Case& c : cases) {
        Builder bld;
        uint32_t x = bld.typed_input("a", {10}, bld.dtype(E::QuantizedS8, sa));
        uint32_t y = bld.typed_input("b", {10}, bld.dtype(E::Quantized8Asymm, sb, zb));
        uint32_t z = bld.add("ElemwiseMultiType", {x, y}, fbs::OperatorParam::ElemwiseMultiType,
                             fbs::CreateElemwiseMultiType(bld.fbb, c.mode).Union(), {},
                             bld.dtype(E::QuantizedS8, so));
        auto bytes = bld.finish(z);
        auto model = inference::Model::load(std::span<const uint8_t>(bytes));
        model.set_input("a", a.data(), std::vector<int64_t>{10});
        model.set_input("b", b.data(), std::vector<int64_t>{10});
        model.run();
        auto out = model.output(model.output_names().at(0));
        EXPECT_EQ(out.dtype(), "QuantizedS8(0.04)");
        const int8_t* got = out.data<int8_t>();
        for (size_t i = 0; i < a.size(); ++i) {
            float v = c.f(sa * a[i], sb * (static_cast<int>(b[i]) - zb));
            float q = std::clamp(std::round(v * (1.0f / so)), -128.0f, 127.0f);
            EXPECT_EQ(got[i], static_cast<int8_t>(q)) << "mode " << c.mode << " at " << i;
        }
    }
    {
        Builder bld;  // a fixed-point mode is named
        uint32_t x = bld.typed_input("a", {10}, bld.dtype(E::QuantizedS8, sa));
        uint32_t z = bld.add("ElemwiseMultiType", {x, x, x}, fbs::OperatorParam::ElemwiseMultiType,
                             fbs::CreateElemwiseMultiType(bld.fbb, 1).Union(), {},
                             bld.dtype(E::QuantizedS8, so));
        EXPECT_NE(load_error(bld.finish(z)).find("ElemwiseMultiType mode 1 (a fixed-point"),
                  std::string::npos);
    }
    {
        Builder bld;  // a quantized mode without its output dtype
        uint32_t x = bld.typed_input("a", {10}, bld.dtype(E::QuantizedS8, sa));
        uint32_t z = bld.add("ElemwiseMultiType", {x, x}, fbs::OperatorParam::ElemwiseMultiType,
                             fbs::CreateElemwiseMultiType(bld.fbb, 6).Union());
        EXPECT_NE(load_error(bld.finish(z)).find("without a quantized output dtype"),
                  std::string::npos);
    }
    {
        Builder bld;  // a plain Elemwise on QuantizedS8 (MegEngine writes ElemwiseMultiType)
        uint32_t x = bld.typed_input("a", {10}, bld.dtype(E::QuantizedS8, sa));
        uint32_t z = bld.add("Elemwise", {x, x}, fbs::OperatorParam::Elemwise,
                             fbs::CreateElemwise(bld.fbb, 21).Union());
        auto err = load_error(bld.finish(z));
        EXPECT_NE(err.find("Elemwise mode 21 on QuantizedS8(0.05)"), std::string::npos) << err;
    }
}

// A quantized Elemwise (a quantized Linear's QuantizedS32 bias addition, a RELU or MAX between
// quantized layers) computes on the stored integers as MegEngine does: exact at any magnitude
// (float32 would round sums beyond 2^24), wrapping at the storage's ends; the other modes and
// Quantized8Asymm, which MegEngine refuses, are named.
TEST(MegEngineModel, QuantizedElemwiseIsExactOnTheIntegers) {
    using E = fbs::DTypeEnum;
    const std::vector<int32_t> a{(1 << 24) + 1, (1 << 30) + 3, -((1 << 24) + 1), 2147483647, -7};
    const std::vector<int32_t> b{2, (1 << 29) + 1, -2, 1, 7};
    struct Case {
        uint32_t mode;  // MegEngine's Elemwise.Mode
        std::vector<int32_t> want;
    };
    const Case cases[] = {
            {16,  // ADD
             {(1 << 24) + 3, (1 << 30) + (1 << 29) + 4, -((1 << 24) + 3), -2147483647 - 1, 0}},
            {24, {(1 << 24) - 1, (1 << 29) + 2, -((1 << 24) - 1), 2147483646, -14}},  // SUB
            {18, {(1 << 24) + 1, (1 << 30) + 3, -2, 2147483647, 7}},                  // MAX
    };
    for (const Case& k : cases) {
        Builder bld;
        uint32_t x = bld.typed_input("a", {5}, bld.dtype(E::QuantizedS32, 0.001f));
        uint32_t y = bld.typed_input("b", {5}, bld.dtype(E::QuantizedS32, 0.001f));
        uint32_t z = bld.add("Elemwise", {x, y}, fbs::OperatorParam::Elemwise,
                             fbs::CreateElemwise(bld.fbb, k.mode).Union());
        auto bytes = bld.finish(z);
        auto model = inference::Model::load(std::span<const uint8_t>(bytes));
        model.set_input("a", a.data(), std::vector<int64_t>{5});
        model.set_input("b", b.data(), std::vector<int64_t>{5});
        model.run();
        auto out = model.output(model.output_names().at(0));
        EXPECT_EQ(out.dtype(), "QuantizedS32(0.001)");
        EXPECT_EQ(std::vector<int32_t>(out.data<int32_t>(), out.data<int32_t>() + 5), k.want)
                << "mode " << k.mode;
    }
    {
        Builder bld;  // RELU (mode 0) of QuantizedS8 keeps the dtype
        const std::vector<int8_t> q{-128, -1, 0, 5, 127};
        uint32_t x = bld.typed_input("a", {5}, bld.dtype(E::QuantizedS8, 0.5f));
        uint32_t z = bld.add("Elemwise", {x}, fbs::OperatorParam::Elemwise,
                             fbs::CreateElemwise(bld.fbb, 0).Union());
        auto bytes = bld.finish(z);
        auto model = inference::Model::load(std::span<const uint8_t>(bytes));
        model.set_input("a", q.data(), std::vector<int64_t>{5});
        model.run();
        auto out = model.output(model.output_names().at(0));
        EXPECT_EQ(out.dtype(), "QuantizedS8(0.5)");
        EXPECT_EQ(std::vector<int8_t>(out.data<int8_t>(), out.data<int8_t>() + 5),
                  (std::vector<int8_t>{0, 0, 0, 5, 127}));
    }
    {
        Builder bld;  // ADD on Quantized8Asymm: MegEngine refuses it
        uint32_t x = bld.typed_input("a", {5}, bld.dtype(E::Quantized8Asymm, 0.5f, 128));
        uint32_t z = bld.add("Elemwise", {x, x}, fbs::OperatorParam::Elemwise,
                             fbs::CreateElemwise(bld.fbb, 16).Union());
        auto err = load_error(bld.finish(z));
        EXPECT_NE(err.find("Elemwise mode 16 on Quantized8Asymm(0.5, 128)"), std::string::npos)
                << err;
    }
}

TEST(MegEngineModel, LoadAndRunRunsIt) {
    auto log = fs::temp_directory_path() / ("neomeg_mge_lar_" + std::to_string(::getpid()));
    auto run = [&](const char* model) {
        std::string cmd = std::string(NEOMEG_LOAD_AND_RUN) + " " + (kDir / model).string() +
                          " --iters 1 > " + log.string() + " 2>&1";
        EXPECT_EQ(std::system(cmd.c_str()), 0) << model;
        std::ifstream in(log);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    std::string out = run("resnet_tiny.mge");
    EXPECT_NE(out.find("produced by MegEngine"), std::string::npos) << out;
    EXPECT_NE(out.find("output out: (2, 10) float32"), std::string::npos) << out;
    out = run("quant_cnn.mge");
    EXPECT_NE(out.find("output out: (2, 5) float32"), std::string::npos) << out;
    EXPECT_NE(out.find("output feat: (2, 8, 2, 2) QuantizedS8("), std::string::npos) << out;
    fs::remove(log);
}

}  // namespace
}  // namespace neomeg::serialization
