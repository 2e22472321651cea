// The graph path's plan building and running (conv_graph.h) on a stand-in cuDNN backend: a
// CudnnApi table whose backend entry points keep descriptors in memory, offer the engines a test
// sets per heuristics mode, finalize the plans a test allows and record what is executed. It
// checks the descriptors built (tensors, convolution, the direction's operation), the choice
// (mode A's first allowed engine that finalizes, then mode FALLBACK's, TF32 honoured), the
// declines (no graph API, a library that fails to load its graph part, no engine), the variant
// pack and the handle's cache, without a GPU or cuDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "src/cuda/conv_graph.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::cuda;

namespace {

struct FakeDesc {
    cudnnBackendDescriptorType_t type;
    std::map<cudnnBackendAttributeName_t, std::vector<std::byte>> attrs;
    bool finalized = false, destroyed = false;
    int64_t engine = -1;  // ENGINECFG, ENGINE and EXECUTION_PLAN descriptors

    template <class T>
    std::vector<T> values(cudnnBackendAttributeName_t name) const {
        auto it = attrs.find(name);
        if (it == attrs.end())
            return {};
        std::vector<T> v(it->second.size() / sizeof(T));
        std::memcpy(v.data(), it->second.data(), it->second.size());
        return v;
    }
    FakeDesc* desc(cudnnBackendAttributeName_t name) const {
        auto v = values<void*>(name);
        return v.size() == 1 ? static_cast<FakeDesc*>(v[0]) : nullptr;
    }
};

// The stand-in library's state; each test sets what it needs (Stub resets it).
struct FakeCudnn {
    std::map<cudnnBackendHeurMode_t, std::vector<int64_t>> heuristics;
    std::map<int64_t, std::vector<cudnnBackendNumericalNote_t>> notes;
    std::map<int64_t, std::vector<cudnnBackendBehaviorNote_t>> behavior;
    std::set<int64_t> finalizable;
    std::map<int64_t, int64_t> workspace;
    cudnnStatus_t create_status = CUDNN_STATUS_SUCCESS;
    std::vector<std::unique_ptr<FakeDesc>> all;
    std::vector<cudnnBackendDescriptorType_t> created;
    struct Execution {
        cudnnHandle_t handle;
        int64_t engine;
        std::vector<void*> ptrs;
        std::vector<int64_t> uids;
        void* workspace;
    };
    std::vector<Execution> executed;

    size_t live() const {
        return std::count_if(all.begin(), all.end(), [](auto& d) { return !d->destroyed; });
    }
    // The finalized descriptors of a type, in order of creation.
    std::vector<FakeDesc*> finalized(cudnnBackendDescriptorType_t type) const {
        std::vector<FakeDesc*> r;
        for (auto& d : all)
            if (d->type == type && d->finalized)
                r.push_back(d.get());
        return r;
    }
};
FakeCudnn g;

FakeDesc* fake(cudnnBackendDescriptor_t d) {
    return static_cast<FakeDesc*>(d);
}

size_t element_size(cudnnBackendAttributeType_t t) {
    switch (t) {
        case CUDNN_TYPE_INT64:
            return sizeof(int64_t);
        case CUDNN_TYPE_FLOAT:
            return sizeof(float);
        case CUDNN_TYPE_HANDLE:
        case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        case CUDNN_TYPE_VOID_PTR:
            return sizeof(void*);
        case CUDNN_TYPE_DATA_TYPE:
            return sizeof(cudnnDataType_t);
        case CUDNN_TYPE_CONVOLUTION_MODE:
            return sizeof(cudnnConvolutionMode_t);
        case CUDNN_TYPE_HEUR_MODE:
            return sizeof(cudnnBackendHeurMode_t);
        default:
            ADD_FAILURE() << "attribute type " << t << " not expected";
            return 0;
    }
}

cudnnStatus_t create(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
    if (g.create_status != CUDNN_STATUS_SUCCESS)
        return g.create_status;
    g.all.push_back(std::make_unique<FakeDesc>(FakeDesc{type, {}}));
    g.created.push_back(type);
    *d = g.all.back().get();
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t destroy(cudnnBackendDescriptor_t d) {
    EXPECT_FALSE(fake(d)->destroyed);
    fake(d)->destroyed = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                       cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    FakeDesc* f = fake(d);
    if (f->finalized)
        return CUDNN_STATUS_BAD_PARAM;  // cuDNN refuses to change a finalized descriptor
    auto bytes = static_cast<const std::byte*>(values);
    f->attrs[name].assign(bytes, bytes + element_size(type) * static_cast<size_t>(count));
    if (name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
        f->engine = fake(*static_cast<void* const*>(values))->engine;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(cudnnBackendDescriptor_t d) {
    FakeDesc* f = fake(d);
    if (f->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && !g.finalizable.count(f->engine))
        return CUDNN_STATUS_NOT_SUPPORTED;
    f->finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t get_attr(cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t name,
                       cudnnBackendAttributeType_t, int64_t requested, int64_t* count,
                       void* values) {
    FakeDesc* f = fake(d);
    switch (name) {
        case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
            auto mode = f->values<cudnnBackendHeurMode_t>(CUDNN_ATTR_ENGINEHEUR_MODE).at(0);
            const auto& engines = g.heuristics[mode];
            *count = std::min<int64_t>(requested ? requested : INT64_MAX,
                                       static_cast<int64_t>(engines.size()));
            for (int64_t i = 0; values && i < *count; ++i) {
                FakeDesc* cfg = fake(static_cast<void**>(values)[i]);
                cfg->engine = engines[i];
                cfg->finalized = true;
            }
            return CUDNN_STATUS_SUCCESS;
        }
        case CUDNN_ATTR_ENGINECFG_ENGINE:
            fake(*static_cast<void**>(values))->engine = f->engine;
            *count = 1;
            return CUDNN_STATUS_SUCCESS;
        case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
            *static_cast<int64_t*>(values) = f->engine;
            *count = 1;
            return CUDNN_STATUS_SUCCESS;
        case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
            const auto& n = g.notes[f->engine];
            *count = static_cast<int64_t>(n.size());
            std::copy(n.begin(), n.end(), static_cast<cudnnBackendNumericalNote_t*>(values));
            return CUDNN_STATUS_SUCCESS;
        }
        case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: {
            const auto& n = g.behavior[f->engine];
            *count = static_cast<int64_t>(n.size());
            std::copy(n.begin(), n.end(), static_cast<cudnnBackendBehaviorNote_t*>(values));
            return CUDNN_STATUS_SUCCESS;
        }
        case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
            *static_cast<int64_t*>(values) = g.workspace[f->engine];
            *count = 1;
            return f->finalized ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_INITIALIZED;
        default:
            ADD_FAILURE() << "attribute " << name << " not expected";
            return CUDNN_STATUS_BAD_PARAM;
    }
}

cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t p) {
    FakeDesc* pack = fake(p);
    EXPECT_TRUE(pack->finalized);
    g.executed.push_back({h, fake(plan)->engine,
                          pack->values<void*>(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS),
                          pack->values<int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                          pack->values<void*>(CUDNN_ATTR_VARIANT_PACK_WORKSPACE).at(0)});
    return CUDNN_STATUS_SUCCESS;
}

const char* error_string(cudnnStatus_t s) {
    return s == CUDNN_STATUS_NOT_SUPPORTED ? "CUDNN_STATUS_NOT_SUPPORTED" : "another status";
}

CudnnApi stub_api() {
    CudnnApi api;
    api.cudnnBackendCreateDescriptor = create;
    api.cudnnBackendDestroyDescriptor = destroy;
    api.cudnnBackendSetAttribute = set_attr;
    api.cudnnBackendGetAttribute = get_attr;
    api.cudnnBackendFinalize = finalize;
    api.cudnnBackendExecute = execute;
    api.cudnnGetErrorString = error_string;
    return api;
}

// A handle value the stand-in only passes along.
const cudnnHandle_t kHandle = reinterpret_cast<cudnnHandle_t>(uintptr_t{0x1000});

GraphConvSpec spec(ConvKind kind = ConvKind::Forward, bool tf32 = false,
                   DType dt = dtype::Float32) {
    return *graph_conv_spec(kind, {false, {1, 1}, {1, 1}, {1, 1}, 1},
                            TensorLayout({2, 3, 7, 7}, dt), TensorLayout({5, 3, 3, 3}, dt),
                            TensorLayout({2, 5, 7, 7}, dt), tf32);
}

class CudaConvGraphStub : public ::testing::Test {
protected:
    void SetUp() override { g = FakeCudnn{}; }
    void TearDown() override { g = FakeCudnn{}; }
    CudnnApi api = stub_api();
};

}  // namespace

TEST_F(CudaConvGraphStub, DescribesTheCaseToCudnn) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {4};
    g.finalizable = {4};
    auto r = build_graph_plan(api, kHandle, spec(ConvKind::BackwardData));
    ASSERT_TRUE(r.plan) << r.why_not;
    auto tensors = g.finalized(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    ASSERT_EQ(tensors.size(), 3u);
    auto uid = [](const FakeDesc* t) {
        return t->values<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID).at(0);
    };
    EXPECT_EQ(tensors[0]->values<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS),
              (std::vector<int64_t>{2, 3, 7, 7}));
    EXPECT_EQ(tensors[0]->values<int64_t>(CUDNN_ATTR_TENSOR_STRIDES),
              (std::vector<int64_t>{147, 49, 7, 1}));
    EXPECT_EQ(tensors[1]->values<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS),
              (std::vector<int64_t>{5, 3, 3, 3}));
    EXPECT_EQ(tensors[2]->values<int64_t>(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT),
              (std::vector<int64_t>{16}));
    EXPECT_EQ(tensors[2]->values<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE),
              (std::vector<cudnnDataType_t>{CUDNN_DATA_FLOAT}));
    auto convs = g.finalized(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    ASSERT_EQ(convs.size(), 1u);
    EXPECT_EQ(convs[0]->values<int64_t>(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS),
              (std::vector<int64_t>{2}));
    EXPECT_EQ(convs[0]->values<int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS),
              (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(convs[0]->values<int64_t>(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS),
              (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(convs[0]->values<cudnnConvolutionMode_t>(CUDNN_ATTR_CONVOLUTION_CONV_MODE),
              (std::vector<cudnnConvolutionMode_t>{CUDNN_CROSS_CORRELATION}));
    EXPECT_EQ(convs[0]->values<cudnnDataType_t>(CUDNN_ATTR_CONVOLUTION_COMP_TYPE),
              (std::vector<cudnnDataType_t>{CUDNN_DATA_FLOAT}));
    // Backward data: dx is x's tensor, dy is y's, alpha 1 and beta 0 (grad is overwritten).
    auto ops = g.finalized(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(uid(ops[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX)), kGraphUidX);
    EXPECT_EQ(uid(ops[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W)), kGraphUidW);
    EXPECT_EQ(uid(ops[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY)), kGraphUidY);
    EXPECT_EQ(ops[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC), convs[0]);
    EXPECT_EQ(ops[0]->values<float>(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA),
              (std::vector<float>{1}));
    EXPECT_EQ(ops[0]->values<float>(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA),
              (std::vector<float>{0}));
    auto graphs = g.finalized(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    ASSERT_EQ(graphs.size(), 1u);
    EXPECT_EQ(graphs[0]->desc(CUDNN_ATTR_OPERATIONGRAPH_OPS), ops[0]);
    EXPECT_EQ(graphs[0]->values<cudnnHandle_t>(CUDNN_ATTR_OPERATIONGRAPH_HANDLE).at(0), kHandle);
}

TEST_F(CudaConvGraphStub, EachDirectionBindsItsOwnOperation) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {1};
    g.finalizable = {1};
    ASSERT_TRUE(build_graph_plan(api, kHandle, spec(ConvKind::Forward)).plan);
    ASSERT_TRUE(build_graph_plan(api, kHandle, spec(ConvKind::BackwardFilter)).plan);
    auto fwd = g.finalized(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    auto bwf = g.finalized(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    ASSERT_EQ(fwd.size(), 1u);
    ASSERT_EQ(bwf.size(), 1u);
    auto uid = [](const FakeDesc* t) {
        return t ? t->values<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID).at(0) : -1;
    };
    EXPECT_EQ(uid(fwd[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X)), kGraphUidX);
    EXPECT_EQ(uid(fwd[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W)), kGraphUidW);
    EXPECT_EQ(uid(fwd[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y)), kGraphUidY);
    EXPECT_EQ(uid(bwf[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X)), kGraphUidX);
    EXPECT_EQ(uid(bwf[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW)), kGraphUidW);
    EXPECT_EQ(uid(bwf[0]->desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY)), kGraphUidY);
}

TEST_F(CudaConvGraphStub, ModeAFirstAllowedEngineWithItsWorkspace) {
    // Mode A offers a tensor-core engine first, then an FMA one; both finalize.
    g.heuristics[CUDNN_HEUR_MODE_A] = {7, 3};
    g.notes[7] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
    g.finalizable = {7, 3};
    g.workspace = {{7, 4096}, {3, 512}};
    auto fp32 = build_graph_plan(api, kHandle, spec(ConvKind::Forward, false));
    ASSERT_TRUE(fp32.plan) << fp32.why_not;
    EXPECT_EQ(fp32.plan->engine(), 3);  // TF32 off: no tensor core for float32
    EXPECT_EQ(fp32.plan->workspace(), 512u);
    auto tf32 = build_graph_plan(api, kHandle, spec(ConvKind::Forward, true));
    ASSERT_TRUE(tf32.plan);
    EXPECT_EQ(tf32.plan->engine(), 7);
    EXPECT_EQ(tf32.plan->workspace(), 4096u);
    auto half = build_graph_plan(api, kHandle, spec(ConvKind::Forward, false, dtype::Float16));
    ASSERT_TRUE(half.plan);
    EXPECT_EQ(half.plan->engine(), 7);
    // Mode FALLBACK was not asked: A had an engine.
    for (auto* h : g.finalized(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR))
        EXPECT_EQ(h->values<cudnnBackendHeurMode_t>(CUDNN_ATTR_ENGINEHEUR_MODE).at(0),
                  CUDNN_HEUR_MODE_A);
}

TEST_F(CudaConvGraphStub, SkipsRuntimeCompiledEngines) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {11, 4};
    g.behavior[11] = {CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION};
    g.finalizable = {11, 4};
    auto r = build_graph_plan(api, kHandle, spec(ConvKind::Forward, false, dtype::Float16));
    ASSERT_TRUE(r.plan);
    EXPECT_EQ(r.plan->engine(), 4);
}

TEST_F(CudaConvGraphStub, FallbackModeWhereNoModeAEngineFinalizes) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {5, 6};
    g.heuristics[CUDNN_HEUR_MODE_FALLBACK] = {5, 9};
    g.finalizable = {9};
    auto r = build_graph_plan(api, kHandle, spec());
    ASSERT_TRUE(r.plan) << r.why_not;
    EXPECT_EQ(r.plan->engine(), 9);
    EXPECT_EQ(r.why_not, "");
    // Engine 5 was tried once: mode FALLBACK's copy of it is skipped.
    size_t plans =
            std::count(g.created.begin(), g.created.end(), CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    EXPECT_EQ(plans, 3u);  // 5, 6, 9
}

TEST_F(CudaConvGraphStub, CandidatesForMeasuringInHeuristicsOrder) {
    // Mode A's allowed engines that finalize, then FALLBACK's new ones, up to the limit.
    g.heuristics[CUDNN_HEUR_MODE_A] = {7, 3, 5, 2};
    g.heuristics[CUDNN_HEUR_MODE_FALLBACK] = {3, 9, 1};
    g.notes[2] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
    g.finalizable = {7, 3, 2, 9, 1};
    auto engines = [](const GraphCandidates& c) {
        std::vector<int64_t> e;
        for (const auto& p : c.plans)
            e.push_back(p->engine());
        return e;
    };
    auto all = graph_plan_candidates(api, kHandle, spec(), 8);
    EXPECT_EQ(engines(all), (std::vector<int64_t>{7, 3, 9, 1}));
    EXPECT_EQ(all.why_not, "");
    EXPECT_EQ(engines(graph_plan_candidates(api, kHandle, spec(), 2)),
              (std::vector<int64_t>{7, 3}));
    // TF32 on lets the tensor-core engine in.
    EXPECT_EQ(engines(graph_plan_candidates(api, kHandle, spec(ConvKind::Forward, true), 8)),
              (std::vector<int64_t>{7, 3, 2, 9, 1}));
}

TEST_F(CudaConvGraphStub, NoEngineMeansTheLegacyPlanAndSaysWhy) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {5, 2};
    g.notes[2] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
    g.finalizable = {2};
    auto r = build_graph_plan(api, kHandle, spec());
    EXPECT_FALSE(r.plan);
    EXPECT_NE(r.why_not.find("engine 5: cudnnBackendFinalize failed (CUDNN_STATUS_NOT_SUPPORTED)"),
              std::string::npos)
            << r.why_not;
    EXPECT_NE(r.why_not.find("engine 2 not allowed"), std::string::npos) << r.why_not;
    EXPECT_NE(r.why_not.find("mode FALLBACK: no engine"), std::string::npos) << r.why_not;
    EXPECT_EQ(g.live(), 0u);  // nothing leaked on the way
}

TEST_F(CudaConvGraphStub, ALibraryWithoutAWorkingGraphApiDeclines) {
    // The graph part failed to load: every descriptor creation fails.
    g.create_status = CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED;
    auto r = build_graph_plan(api, kHandle, spec());
    EXPECT_FALSE(r.plan);
    EXPECT_NE(r.why_not.find("cudnnBackendCreateDescriptor failed"), std::string::npos)
            << r.why_not;
    // A table without the entry points (a stand-in library, or one of another major version).
    CudnnApi bare;
    r = build_graph_plan(bare, kHandle, spec());
    EXPECT_FALSE(r.plan);
    EXPECT_EQ(r.why_not, "this cuDNN has no graph API");
}

TEST_F(CudaConvGraphStub, ExecutesWithThePlansUidsAndFreesEverything) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {8};
    g.finalizable = {8};
    g.workspace[8] = 256;
    {
        auto r = build_graph_plan(api, kHandle, spec(ConvKind::BackwardFilter));
        ASSERT_TRUE(r.plan);
        EXPECT_EQ(g.live(), 1u);  // the execution plan alone outlives the build
        int x, w, y, ws;
        EXPECT_EQ(execute_graph_plan(api, kHandle, *r.plan, &x, &w, &y, &ws), CUDNN_STATUS_SUCCESS);
        ASSERT_EQ(g.executed.size(), 1u);
        const auto& e = g.executed[0];
        EXPECT_EQ(e.handle, kHandle);
        EXPECT_EQ(e.engine, 8);
        EXPECT_EQ(e.ptrs, (std::vector<void*>{&x, &w, &y}));
        EXPECT_EQ(e.uids, (std::vector<int64_t>{kGraphUidX, kGraphUidW, kGraphUidY}));
        EXPECT_EQ(e.workspace, &ws);
    }
    EXPECT_EQ(g.live(), 0u);
}

TEST_F(CudaConvGraphStub, HandleCacheBuildsEachCaseOnce) {
    g.heuristics[CUDNN_HEUR_MODE_A] = {3};
    g.finalizable = {3};
    ConvGraphCache cache;
    int builds = 0;
    auto build = [&](const GraphConvSpec& s) {
        return [&, s] {
            ++builds;
            return build_graph_plan(api, kHandle, s);
        };
    };
    auto a = cache.get_or_build(spec(), build(spec()));
    auto b = cache.get_or_build(spec(), build(spec()));
    EXPECT_EQ(builds, 1);
    ASSERT_TRUE(a);
    EXPECT_EQ(a, b);
    // Another case: another entry. A declined case is cached too, with its reason.
    g.finalizable.clear();
    auto c =
            cache.get_or_build(spec(ConvKind::Forward, true), build(spec(ConvKind::Forward, true)));
    cache.get_or_build(spec(ConvKind::Forward, true), build(spec(ConvKind::Forward, true)));
    EXPECT_FALSE(c);
    EXPECT_EQ(builds, 2);
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_NE(cache.why_not(spec(ConvKind::Forward, true)).find("engine 3"), std::string::npos);
    EXPECT_EQ(cache.why_not(spec()), "");
}

TEST(CudaConvGraphSwitch, SetAndRestore) {
    bool was = conv_graph_enabled();
    set_conv_graph_enabled(false);
    EXPECT_FALSE(conv_graph_enabled());
    set_conv_graph_enabled(true);
    EXPECT_TRUE(conv_graph_enabled());
    set_conv_graph_enabled(was);
}
