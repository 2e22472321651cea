// Convolutions through cuDNN's graph (backend) API, the engines cuDNN 9 adds beyond the legacy
// algorithms (PyTorch reaches them through cudnn-frontend): a one-operation graph per case,
// engine configs from heuristics mode A (then mode FALLBACK where none of A's finalizes), the first
// allowed one (conv_graph_spec.h: TF32 honoured) that finalizes into an execution plan, with its
// workspace size. Plans are cached per handle and case (ConvGraphCache); a case no engine takes is
// cached as declined, and its convolution runs the legacy plan (conv_plan.h), as does every case
// while conv_graph_enabled() is off. Measuring (conv_plan.cpp) times graph_plan_candidates'
// plans against the legacy algorithms.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/cuda/conv_graph_spec.h"

namespace neomeg::dnn::cuda {

// A finalized execution plan (cudnnBackendDescriptor_t of type EXECUTION_PLAN).
class GraphConvPlan {
public:
    GraphConvPlan(const CudnnApi& api, cudnnBackendDescriptor_t plan, int64_t engine,
                  size_t workspace)
        : m_api(&api), m_plan(plan), m_engine(engine), m_workspace(workspace) {}
    ~GraphConvPlan() { m_api->cudnnBackendDestroyDescriptor(m_plan); }
    GraphConvPlan(const GraphConvPlan&) = delete;
    GraphConvPlan& operator=(const GraphConvPlan&) = delete;

    cudnnBackendDescriptor_t get() const { return m_plan; }
    int64_t engine() const { return m_engine; }  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
    size_t workspace() const { return m_workspace; }

private:
    const CudnnApi* m_api;
    cudnnBackendDescriptor_t m_plan;
    int64_t m_engine;
    size_t m_workspace;
};

// What building a plan for a case came to: the plan, or null and why not (the engines' statuses,
// for NEOMEG_DEBUG and the tests).
struct GraphBuild {
    std::shared_ptr<const GraphConvPlan> plan;
    std::string why_not;
};

// Builds the case's plan on `api` (the process's libcudnn() or a test's stand-in) and `handle`.
// Never throws for a case cuDNN declines: a table without the graph API, a failing call or no
// engine that finalizes all give a null plan.
GraphBuild build_graph_plan(const CudnnApi& api, cudnnHandle_t handle, const GraphConvSpec& spec);

// Up to `max_plans` plans of the case, one per allowed engine that finalizes, in the heuristics'
// order (mode A's, then FALLBACK's engines not already tried): the candidates measuring times
// (Handle::cuda_benchmark_kernel). `why_not` as for build_graph_plan where there is none.
struct GraphCandidates {
    std::vector<std::shared_ptr<const GraphConvPlan>> plans;
    std::string why_not;
};
GraphCandidates graph_plan_candidates(const CudnnApi& api, cudnnHandle_t handle,
                                      const GraphConvSpec& spec, size_t max_plans);

// Runs `plan` on device pointers x, w, y (the spec's uids) with `workspace` (at least the plan's).
cudnnStatus_t execute_graph_plan(const CudnnApi& api, cudnnHandle_t handle,
                                 const GraphConvPlan& plan, void* x, void* w, void* y,
                                 void* workspace);

// The plans one handle built, by graph_cache_key: each case is planned once per handle, whichever
// operator object runs it (finalizing a plan can take milliseconds; a runtime-compiled engine,
// far more).
class ConvGraphCache {
public:
    // The cached build of the case, or `build()`'s, cached.
    template <class Build>
    std::shared_ptr<const GraphConvPlan> get_or_build(const GraphConvSpec& spec, Build&& build) {
        std::string key = graph_cache_key(spec);
        std::lock_guard lock(m_mutex);
        auto it = m_plans.find(key);
        if (it == m_plans.end())
            it = m_plans.emplace(std::move(key), build()).first;
        return it->second.plan;
    }
    size_t size() const {
        std::lock_guard lock(m_mutex);
        return m_plans.size();
    }
    // Why the case has no plan ("" when it has one or was never built).
    std::string why_not(const GraphConvSpec& spec) const {
        std::lock_guard lock(m_mutex);
        auto it = m_plans.find(graph_cache_key(spec));
        return it == m_plans.end() ? "" : it->second.why_not;
    }

private:
    mutable std::mutex m_mutex;
    std::unordered_map<std::string, GraphBuild> m_plans;
};

// Whether CUDA convolutions try the graph API first (the default) or run only the legacy
// algorithms: off where the environment sets NEOMEG_CUDNN_LEGACY to anything but "" or "0" when
// first asked. Process-wide; part of an operator's plan key, so switching takes effect on the
// next call.
bool conv_graph_enabled();
void set_conv_graph_enabled(bool on);

}  // namespace neomeg::dnn::cuda
