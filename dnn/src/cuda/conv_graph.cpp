#include "src/cuda/conv_graph.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "src/cuda/cudnn_backend.h"

namespace neomeg::dnn::cuda {
namespace {

// Heuristics list tens of configs; those past the first few are rarely better than the legacy
// path, and each one tried costs a finalize.
constexpr int64_t kMaxConfigs = 16;

BackendDesc tensor_desc(const CudnnApi& api, const GraphTensorSpec& t) {
    BackendDesc d(api, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t.type)
            .set(CUDNN_ATTR_TENSOR_DIMENSIONS, t.dims)
            .set(CUDNN_ATTR_TENSOR_STRIDES, t.strides)
            .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, t.uid)
            .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, t.alignment)
            .finalize();
    return d;
}

BackendDesc conv_desc(const CudnnApi& api, const GraphConvSpec& s) {
    BackendDesc d(api, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    d.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &s.compute)
            .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &s.mode)
            .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(s.stride.size()))
            .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, s.pre_pad)
            .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, s.post_pad)
            .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, s.dilation)
            .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, s.stride)
            .finalize();
    return d;
}

// The direction's operation descriptor and the attributes that take alpha, beta, the convolution
// and the tensors in the roles x, w, y.
struct OpAttrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t alpha, beta, conv, x, w, y;
};

OpAttrs op_attrs(ConvKind kind) {
    switch (kind) {
        case ConvKind::Forward:
            return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
        case ConvKind::BackwardData:
            return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
        default:
            return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
    }
}

// The descriptors a graph refers to; cuDNN copies what it needs when finalizing, but they are kept
// until the plan is built, as cudnn-frontend does.
struct Graph {
    BackendDesc x, w, y, conv, op, graph;
};

Graph make_graph(const CudnnApi& api, cudnnHandle_t handle, const GraphConvSpec& s,
                 std::string& why) {
    Graph g{tensor_desc(api, s.x),
            tensor_desc(api, s.w),
            tensor_desc(api, s.y),
            conv_desc(api, s),
            {},
            {}};
    const std::array<std::pair<const BackendDesc*, const char*>, 4> parts{
            {{&g.x, "x"}, {&g.w, "w"}, {&g.y, "y"}, {&g.conv, "convolution"}}};
    for (auto [d, what] : parts)
        if (!d->ok()) {
            why = str_cat("the ", what, " descriptor: ", d->what());
            return g;
        }
    OpAttrs a = op_attrs(s.kind);
    float alpha = 1, beta = 0;
    g.op = BackendDesc(api, a.type);
    g.op.set(a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha)
            .set(a.beta, CUDNN_TYPE_FLOAT, 1, &beta)
            .set(a.conv, g.conv)
            .set(a.x, g.x)
            .set(a.w, g.w)
            .set(a.y, g.y)
            .finalize();
    if (!g.op.ok()) {
        why = "the operation: " + g.op.what();
        return g;
    }
    cudnnBackendDescriptor_t op = g.op.get();
    g.graph = BackendDesc(api, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
            .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op)
            .finalize();
    if (!g.graph.ok())
        why = "the operation graph: " + g.graph.what();
    return g;
}

// The engine configs heuristics `mode` offers for the graph, best first (at most kMaxConfigs).
std::vector<BackendDesc> engine_configs(const CudnnApi& api, const BackendDesc& graph,
                                        cudnnBackendHeurMode_t mode, std::string& why) {
    BackendDesc heur(api, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
            .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
            .finalize();
    int64_t n = heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
    std::vector<BackendDesc> cfgs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < std::min(n, kMaxConfigs); ++i) {
        cfgs.emplace_back(api, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        if (!cfgs.back().ok()) {
            why += "an engine config: " + cfgs.back().what() + "; ";
            return {};
        }
        raw.push_back(cfgs.back().get());
    }
    if (!raw.empty())
        n = heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                     static_cast<int64_t>(raw.size()), raw.data());
    if (!heur.ok()) {
        why += "the heuristics: " + heur.what() + "; ";
        return {};
    }
    cfgs.resize(static_cast<size_t>(std::clamp<int64_t>(n, 0, static_cast<int64_t>(cfgs.size()))));
    return cfgs;
}

struct EngineInfo {
    int64_t index = -1;
    std::vector<cudnnBackendNumericalNote_t> notes;
    std::vector<cudnnBackendBehaviorNote_t> behavior;
};

bool engine_info(const CudnnApi& api, BackendDesc& cfg, EngineInfo& info) {
    BackendDesc engine(api, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t e = engine.get();
    if (!engine.ok() ||
        cfg.get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e) < 0)
        return false;
    std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
    engine.get(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &info.index);
    int64_t n = engine.get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                           static_cast<int64_t>(notes.size()), notes.data());
    std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
    int64_t nb = engine.get(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                            static_cast<int64_t>(behavior.size()), behavior.data());
    if (n < 0 || nb < 0)
        return false;
    info.notes.assign(notes.begin(), notes.begin() + std::min<int64_t>(n, notes.size()));
    info.behavior.assign(behavior.begin(),
                         behavior.begin() + std::min<int64_t>(nb, behavior.size()));
    return true;
}

}  // namespace

GraphBuild build_graph_plan(const CudnnApi& api, cudnnHandle_t handle, const GraphConvSpec& spec) {
    auto c = graph_plan_candidates(api, handle, spec, 1);
    return {c.plans.empty() ? nullptr : c.plans[0], c.why_not};
}

GraphCandidates graph_plan_candidates(const CudnnApi& api, cudnnHandle_t handle,
                                      const GraphConvSpec& spec, size_t max_plans) {
    GraphCandidates r;
    if (!api.cudnnBackendCreateDescriptor || !api.cudnnBackendDestroyDescriptor ||
        !api.cudnnBackendSetAttribute || !api.cudnnBackendGetAttribute ||
        !api.cudnnBackendFinalize || !api.cudnnBackendExecute) {
        r.why_not = "this cuDNN has no graph API";
        return r;
    }
    Graph g = make_graph(api, handle, spec, r.why_not);
    if (!r.why_not.empty())
        return r;
    std::vector<int64_t> tried;
    for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        r.why_not += mode == CUDNN_HEUR_MODE_A ? "mode A: " : "mode FALLBACK: ";
        auto cfgs = engine_configs(api, g.graph, mode, r.why_not);
        if (cfgs.empty())
            r.why_not += "no engine; ";
        for (auto& cfg : cfgs) {
            EngineInfo info;
            if (!engine_info(api, cfg, info)) {
                r.why_not += "an engine config unreadable: " + cfg.what() + "; ";
                continue;
            }
            if (std::find(tried.begin(), tried.end(), info.index) != tried.end())
                continue;
            tried.push_back(info.index);
            if (!graph_engine_allowed(spec, info.notes, info.behavior)) {
                r.why_not += str_cat("engine ", info.index, " not allowed; ");
                continue;
            }
            cudnnBackendDescriptor_t c = cfg.get();
            BackendDesc plan(api, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
            plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
                    .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                         &c)
                    .finalize();
            int64_t ws = 0;
            plan.get(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
            if (!plan.ok() || ws < 0) {
                r.why_not += str_cat("engine ", info.index, ": ", plan.what(), "; ");
                continue;
            }
            r.plans.push_back(std::make_shared<GraphConvPlan>(api, plan.release(), info.index,
                                                              static_cast<size_t>(ws)));
            if (r.plans.size() == max_plans) {
                r.why_not.clear();
                return r;
            }
        }
    }
    if (!r.plans.empty())
        r.why_not.clear();
    return r;
}

cudnnStatus_t execute_graph_plan(const CudnnApi& api, cudnnHandle_t handle,
                                 const GraphConvPlan& plan, void* x, void* w, void* y,
                                 void* workspace) {
    std::array<void*, 3> ptrs{x, w, y};
    std::array<int64_t, 3> uids{kGraphUidX, kGraphUidW, kGraphUidY};
    BackendDesc pack(api, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs.data())
            .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
            .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
            .finalize();
    if (!pack.ok())
        return pack.status();
    return api.cudnnBackendExecute(handle, plan.get(), pack.get());
}

namespace {

std::atomic<bool>& graph_switch() {
    static std::atomic<bool> on{[] {
        const char* v = std::getenv("NEOMEG_CUDNN_LEGACY");
        return !v || std::string_view(v).empty() || std::string_view(v) == "0";
    }()};
    return on;
}

}  // namespace

bool conv_graph_enabled() {
    return graph_switch().load(std::memory_order_relaxed);
}

void set_conv_graph_enabled(bool on) {
    graph_switch().store(on, std::memory_order_relaxed);
}

}  // namespace neomeg::dnn::cuda
