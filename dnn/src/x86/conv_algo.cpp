#include "src/x86/conv_algo.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace neomeg::dnn::x86 {
namespace {

class AlignedWorkspacePlan final : public Plan {
public:
    explicit AlignedWorkspacePlan(std::unique_ptr<Plan> plan) : m_plan(std::move(plan)) {}
    size_t workspace_in_bytes() const override { return m_plan->workspace_in_bytes() + kAlign; }
    const char* name() const override { return m_plan->name(); }
    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        const auto addr = reinterpret_cast<uintptr_t>(ws.ptr);
        const size_t skip = (kAlign - addr % kAlign) % kAlign;
        m_plan->run(tensors, {ws.ptr + skip, ws.size - skip}, stream);
    }

private:
    static constexpr size_t kAlign = 64;
    std::unique_ptr<Plan> m_plan;
};

}  // namespace

std::unique_ptr<Plan> aligned_if_winograd(std::unique_ptr<Plan> plan) {
    if (std::string_view(plan->name()).find("wino") == std::string_view::npos)
        return plan;
    return std::make_unique<AlignedWorkspacePlan>(std::move(plan));
}

std::optional<dnnl::algorithm> ConvAlgoCache::find(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    auto it = m_choices.find(key);
    return it == m_choices.end() ? std::nullopt : std::optional(it->second);
}

void ConvAlgoCache::put(const std::string& key, dnnl::algorithm alg) {
    std::lock_guard lock(m_mutex);
    m_choices[key] = alg;
}

size_t ConvAlgoCache::size() const {
    std::lock_guard lock(m_mutex);
    return m_choices.size();
}

void ConvAlgoCache::clear() {
    std::lock_guard lock(m_mutex);
    m_choices.clear();
}

ConvAlgoCache& conv_algo_cache() {
    static ConvAlgoCache cache;
    return cache;
}

std::string conv_case_key(std::string_view pass, const ConvDims& g,
                          std::span<const TensorLayout> layouts) {
    std::string key(pass);
    auto dims = [&key](const memory::dims& d) {
        key.append(" (");
        for (memory::dim x : d)
            key.append(std::to_string(x)).append(",");
        key.append(")");
    };
    dims(g.stride);
    dims(g.dilate);
    dims(g.pad);
    key.append(" g").append(std::to_string(g.group)).append(g.flip ? " flip" : "");
    for (const TensorLayout& l : layouts)
        key.append(" ").append(l.to_string());
    return key;
}

double time_primitive(const dnnl::primitive& prim, const dnnl::primitive_desc& pd,
                      const dnnl::engine& engine, dnnl::stream& stream) {
    static constexpr int kArgs[] = {DNNL_ARG_SRC,          DNNL_ARG_WEIGHTS,  DNNL_ARG_BIAS,
                                    DNNL_ARG_DST,          DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_DST,
                                    DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS};
    std::unordered_map<int, memory> args;
    for (int arg : kArgs) {
        memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
        if (md.get_size() == 0)
            continue;
        memory m(md, engine);
        // Zeros: the kernels' time does not depend on the values, and no NaN can arise.
        std::memset(m.get_data_handle(), 0, md.get_size());
        args.emplace(arg, std::move(m));
    }
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), engine));
    // A warm-up run first touches the memory; the best of the timed runs discounts interruptions
    // by other work on the machine.
    constexpr int kRuns = 5;
    double best = 0;
    for (int i = 0; i <= kRuns; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        prim.execute(stream, args);
        stream.wait();
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i == 1 || (i > 1 && t < best))
            best = t;
    }
    return best;
}

}  // namespace neomeg::dnn::x86
