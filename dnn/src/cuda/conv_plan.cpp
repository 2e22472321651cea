#include "src/cuda/conv_plan.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <span>
#include <vector>

#include "src/common/exec_report.h"
#include "src/cuda/conv_direction.h"
#include "src/cuda/conv_graph.h"
#include "src/cuda/handle.h"

namespace neomeg::dnn::cuda {
namespace {

cudnnMathType_t math_type(DType dt) {
    if (dt == dtype::Float32)
        return Handle::cuda_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    return CUDNN_TENSOR_OP_MATH;
}

// An algorithm the heuristics offer for the case, with the workspace it needs.
struct Candidate {
    int algo;
    size_t workspace;
};

// The heuristics' algorithms that report success and whose workspace query succeeds, best first.
template <class D>
std::vector<Candidate> heuristic_candidates(cudnnHandle_t h, const ConvPlan& p, D) {
    std::array<typename D::Perf, D::kAlgoCount> perf{};
    int n = 0;
    std::vector<Candidate> c;
    if (D::heuristics(h, p, &n, perf.data()) != CUDNN_STATUS_SUCCESS)
        return c;
    for (int i = 0; i < n; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS)
            continue;
        size_t ws = 0;
        if (D::workspace(h, p, perf[i].algo, &ws) == CUDNN_STATUS_SUCCESS)
            c.push_back({static_cast<int>(perf[i].algo), ws});
    }
    return c;
}

// Device memory for measuring, covering a layout's span (or `bytes`); null when cudaMalloc
// refuses, which is not an error here (the heuristics then choose).
class Scratch {
public:
    explicit Scratch(size_t bytes) { allocate(bytes); }
    explicit Scratch(const TensorLayout& l) {
        auto [lo, hi] = l.span_elems();
        m_offset = static_cast<ptrdiff_t>(l.dtype.size()) * lo;
        allocate(l.dtype.size(static_cast<size_t>(hi - lo)));
    }
    ~Scratch() {
        if (m_base)
            cudaFree(m_base);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    bool ok() const { return m_base != nullptr; }
    size_t bytes() const { return m_bytes; }
    // The address of the layout's element 0 (the span may start before it).
    void* origin() const { return static_cast<std::byte*>(m_base) - m_offset; }
    void* base() const { return m_base; }

private:
    void allocate(size_t bytes) {
        m_bytes = bytes;
        if (cudaMalloc(&m_base, std::max<size_t>(bytes, 1)) != cudaSuccess) {
            cudaGetLastError();  // out of memory is not sticky; leave no error behind
            m_base = nullptr;
        }
    }
    void* m_base = nullptr;
    ptrdiff_t m_offset = 0;
    size_t m_bytes = 0;
};

// What measuring runs on: zero-filled scratch tensors of a case's layouts (the values do not
// change which algorithm is fastest; zeros keep NaNs out) and a workspace of at most half the free
// device memory, so that measuring never takes the memory the model needs. !ok() when the memory
// could not be had; the heuristics then choose. Construct under the handle's DeviceGuard.
class CaseScratch {
    // Declared first: set while ws is initialized.
    bool m_free_known = false;

public:
    CaseScratch(HandleImpl& handle, const TensorLayout& lx, const TensorLayout& lw,
                const TensorLayout& ly, size_t max_workspace)
        : x(lx), w(lw), y(ly), ws(std::min(max_workspace, free_half())) {
        if (!ok())
            return;
        for (const Scratch* s : {&x, &w, &y})
            NM_CUDA_CHECK(cudaMemsetAsync(s->base(), 0, std::max<size_t>(s->bytes(), 1),
                                          handle.stream()));
    }
    bool ok() const { return m_free_known && x.ok() && w.ok() && y.ok() && ws.ok(); }

    Scratch x, w, y, ws;

private:
    size_t free_half() {
        size_t free_bytes = 0, total = 0;
        m_free_known = cudaMemGetInfo(&free_bytes, &total) == cudaSuccess;
        if (!m_free_known)
            cudaGetLastError();
        return free_bytes / 2;
    }
};

// Runs every algorithm on scratch buffers of the case's layouts (cudnnFind*AlgorithmEx, on the
// handle's stream) and returns the fastest that succeeded within the workspace given; nullopt
// when the scratch memory could not be had or measuring failed.
template <class D>
std::optional<ConvAlgoChoice> measure(HandleImpl& handle, const ConvPlan& p, const TensorLayout& x,
                                      const TensorLayout& w, const TensorLayout& y,
                                      size_t max_workspace, D) {
    DeviceGuard guard(handle.device());
    CaseScratch s(handle, x, w, y, max_workspace);
    if (!s.ok())
        return std::nullopt;
    cudaStream_t stream = handle.stream();
    const Scratch &sx = s.x, &sw = s.w, &sy = s.y, &ws = s.ws;
    std::array<typename D::Perf, D::kAlgoCount> perf{};
    int n = 0;
    cudnnStatus_t st = D::find(handle.cudnn(), p, {sx.origin(), sw.origin(), sy.origin()}, &n,
                               perf.data(), ws.base(), ws.bytes());
    // The scratch buffers are freed when this returns: nothing may still run on them.
    NM_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (st != CUDNN_STATUS_SUCCESS)
        return std::nullopt;
    // cudnnFind*Ex returns its results fastest first.
    for (int i = 0; i < n; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws.bytes())
            return ConvAlgoChoice{static_cast<int>(perf[i].algo),
                                  perf[i].memory,
                                  perf[i].mathType,
                                  true,
                                  perf[i].time,
                                  nullptr};
    return std::nullopt;
}

// The graph plans measuring considers: heuristics' order, each engine that finalizes.
constexpr size_t kMaxMeasuredGraphPlans = 8;
constexpr int kTimedRuns = 3;

// A start and a stop event, destroyed with the scope (measuring may throw between them).
class EventPair {
public:
    EventPair() {
        NM_CUDA_CHECK(cudaEventCreate(&start));
        if (cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
            cudaEventDestroy(start);
            throw_cuda_error(e, "cudaEventCreate(&stop)");
        }
    }
    ~EventPair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
    cudaEvent_t start = nullptr, stop = nullptr;
};

struct TimedGraphPlan {
    std::shared_ptr<const GraphConvPlan> plan;
    float ms;
};

// Times each graph plan on scratch buffers of the case's layouts, on the handle's stream (one
// warm-up run, then the mean of kTimedRuns), as cudnnFind*Ex times the legacy algorithms; the
// fastest that ran, or nullopt (no scratch memory, or none ran).
std::optional<TimedGraphPlan> time_graph_plans(
        HandleImpl& handle, std::span<const std::shared_ptr<const GraphConvPlan>> plans,
        const TensorLayout& x, const TensorLayout& w, const TensorLayout& y, size_t max_workspace) {
    DeviceGuard guard(handle.device());
    CaseScratch s(handle, x, w, y, max_workspace);
    if (!s.ok())
        return std::nullopt;
    const Scratch &sx = s.x, &sw = s.w, &sy = s.y, &ws = s.ws;
    const std::array<const void*, 4> ptrs{sx.origin(), sw.origin(), sy.origin(), ws.base()};
    if (!graph_pointers_aligned(ptrs))
        return std::nullopt;
    cudaStream_t stream = handle.stream();
    EventPair ev;
    std::optional<TimedGraphPlan> best;
    for (const auto& p : plans) {
        if (p->workspace() > ws.bytes())
            continue;
        auto run = [&] {
            return execute_graph_plan(libcudnn(), handle.cudnn(), *p, sx.origin(), sw.origin(),
                                      sy.origin(), ws.base()) == CUDNN_STATUS_SUCCESS;
        };
        bool ok = run();
        NM_CUDA_CHECK(cudaEventRecord(ev.start, stream));
        for (int i = 0; ok && i < kTimedRuns; ++i)
            ok = run();
        NM_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
        NM_CUDA_CHECK(cudaEventSynchronize(ev.stop));
        float ms = 0;
        NM_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
        if (ok && (!best || ms / kTimedRuns < best->ms))
            best = TimedGraphPlan{p, ms / kTimedRuns};
    }
    // The scratch buffers are freed when this returns: nothing may still run on them.
    NM_CUDA_CHECK(cudaStreamSynchronize(stream));
    return best;
}

std::string case_key(ConvKind kind, const ConvArgs& args, const TensorLayout& x,
                     const TensorLayout& w, const TensorLayout& y, cudnnMathType_t math) {
    std::string k = str_cat(static_cast<int>(kind), ' ', x.to_string(), ' ', w.to_string(), ' ',
                            y.to_string(), " math", static_cast<int>(math), " group", args.group,
                            args.flip ? " conv" : " xcorr");
    for (const auto* v : {&args.stride, &args.padding, &args.dilation}) {
        k += " [";
        for (int32_t e : *v)
            k += str_cat(e, ',');
        k += ']';
    }
    return k;
}

}  // namespace

ConvPlan::ConvPlan() {
    NM_CUDNN_CHECK(libcudnn().cudnnCreateConvolutionDescriptor(&conv));
}

ConvPlan::~ConvPlan() {
    libcudnn().cudnnDestroyConvolutionDescriptor(conv);
}

std::unique_ptr<ConvPlan> make_conv_plan(HandleImpl& handle, ConvKind kind, const ConvArgs& args,
                                         const TensorLayout& x, const TensorLayout& w,
                                         const TensorLayout& y, bool try_graph) {
    auto type = cudnn_type(x.dtype);
    if (!type || x.is_empty() || w.is_empty() || y.is_empty())
        return nullptr;
    const auto& api = libcudnn();
    auto plan = std::make_unique<ConvPlan>();
    if (!plan->x.set(x) || !plan->y.set(y) || !plan->w.set(w))
        return nullptr;
    std::vector<int> pad, stride, dil;
    if (args.stride.size() == 1) {
        // The 1-D convolution as 2-D over (1, W).
        pad = {0, args.padding[0]};
        stride = {1, args.stride[0]};
        dil = {1, args.dilation[0]};
    } else {
        pad.assign(args.padding.begin(), args.padding.end());
        stride.assign(args.stride.begin(), args.stride.end());
        dil.assign(args.dilation.begin(), args.dilation.end());
    }
    // Half-precision data accumulates in float (cuDNN's PSEUDO_HALF configuration).
    if (api.cudnnSetConvolutionNdDescriptor(plan->conv, static_cast<int>(pad.size()), pad.data(),
                                            stride.data(), dil.data(),
                                            args.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS)
        return nullptr;
    NM_CUDNN_CHECK(api.cudnnSetConvolutionGroupCount(plan->conv, static_cast<int>(args.group)));
    cudnnMathType_t math = math_type(x.dtype);
    NM_CUDNN_CHECK(api.cudnnSetConvolutionMathType(plan->conv, math));
    auto candidates = with_direction(
            kind, [&](auto d) { return heuristic_candidates(handle.cudnn(), *plan, d); });
    if (candidates.empty())
        return nullptr;
    plan->algo = candidates[0].algo;
    plan->workspace = candidates[0].workspace;
    std::optional<GraphConvSpec> spec;
    if (try_graph && conv_graph_enabled())
        spec = graph_conv_spec(kind, args, x, w, y, Handle::cuda_allow_tf32());
    if (!Handle::cuda_benchmark_kernel()) {
        if (spec) {
            cudnnHandle_t h = handle.cudnn();
            plan->graph = handle.conv_graph_cache().get_or_build(*spec, [&] {
                GraphBuild b = build_graph_plan(api, h, *spec);
                // Once per case and handle: the legacy API runs it from here on.
                if (!b.plan && debug_enabled())
                    std::fputs(str_cat("neomeg cuda: cuDNN graph API declined ",
                                       graph_cache_key(*spec), ": ", b.why_not, '\n')
                                       .c_str(),
                               stderr);
                return b;
            });
            if (plan->graph)
                plan->workspace = std::max(plan->workspace, plan->graph->workspace());
        }
        return plan;
    }

    std::string key = case_key(kind, args, x, w, y, math) + (spec ? " graph" : "");
    auto choice = handle.conv_algo_cache().find(key);
    if (!choice) {
        size_t max_ws = 0;
        for (const auto& c : candidates)
            max_ws = std::max(max_ws, c.workspace);
        choice = with_direction(kind,
                                [&](auto d) { return measure(handle, *plan, x, w, y, max_ws, d); });
        if (!choice)
            choice = ConvAlgoChoice{
                    candidates[0].algo, candidates[0].workspace, math, false, 0.f, nullptr};
        if (spec) {
            auto graphs = graph_plan_candidates(api, handle.cudnn(), *spec, kMaxMeasuredGraphPlans);
            size_t graph_ws = 0;
            for (const auto& g : graphs.plans)
                graph_ws = std::max(graph_ws, g->workspace());
            auto fastest = time_graph_plans(handle, graphs.plans, x, w, y, graph_ws);
            if (fastest && (!choice->measured || fastest->ms < choice->ms))
                choice->graph = fastest->plan;
        }
        handle.conv_algo_cache().put(key, *choice);
    }
    plan->algo = choice->algo;
    plan->workspace = choice->workspace;
    plan->measured = choice->measured;
    // A measured algorithm ran with the math type cuDNN reports for it (one that the
    // descriptor's type allows).
    if (choice->measured)
        NM_CUDNN_CHECK(api.cudnnSetConvolutionMathType(plan->conv, choice->math));
    if (choice->graph) {
        plan->graph = choice->graph;
        plan->graph_measured = true;
        plan->workspace = std::max(plan->workspace, plan->graph->workspace());
    }
    return plan;
}

bool use_forward_algo(HandleImpl& handle, ConvPlan& plan, cudnnConvolutionFwdAlgo_t algo) {
    size_t ws = 0;
    if (ConvDirection<ConvKind::Forward>::workspace(handle.cudnn(), plan, algo, &ws) !=
        CUDNN_STATUS_SUCCESS)
        return false;
    plan.algo = static_cast<int>(algo);
    plan.workspace = ws;
    return true;
}

}  // namespace neomeg::dnn::cuda
