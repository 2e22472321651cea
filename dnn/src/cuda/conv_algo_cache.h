// The convolution algorithms a CUDA handle measured (Handle::cuda_benchmark_kernel), by case: a
// shape is measured once per handle, whichever operator object runs it.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace neomeg::dnn::cuda {

class GraphConvPlan;

struct ConvAlgoChoice {
    int algo = 0;
    size_t workspace = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    // false: measuring was not possible (no scratch memory), and this is the heuristics' choice,
    // kept so that the case is not tried again.
    bool measured = true;
    // The measured time of `algo` in milliseconds (where measured).
    float ms = 0;
    // A graph-API plan that measured faster than every legacy algorithm (conv_graph.h), or null;
    // `algo` stays the legacy fallback.
    std::shared_ptr<const GraphConvPlan> graph;
};

class ConvAlgoCache {
public:
    std::optional<ConvAlgoChoice> find(const std::string& key) const {
        std::lock_guard lock(m_mutex);
        auto it = m_choices.find(key);
        return it == m_choices.end() ? std::nullopt : std::optional(it->second);
    }
    void put(const std::string& key, const ConvAlgoChoice& choice) {
        std::lock_guard lock(m_mutex);
        m_choices[key] = choice;
    }
    size_t size() const {
        std::lock_guard lock(m_mutex);
        return m_choices.size();
    }

private:
    mutable std::mutex m_mutex;
    std::unordered_map<std::string, ConvAlgoChoice> m_choices;
};

}  // namespace neomeg::dnn::cuda
