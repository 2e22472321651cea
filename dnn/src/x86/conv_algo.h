// MegEngine's fastrun for the oneDNN convolutions (x86_benchmark_kernel(), switched by
// megengine.config.benchmark_kernel): the first time a case is planned, every algorithm oneDNN
// implements for it (convolution_direct and, where it has one, convolution_winograd) is timed on
// scratch memory and the fastest is kept for that case, process-wide, whichever operator object
// (an eager op, a traced graph's node, on any x86 handle) plans it next. Off (the default), the
// kernels plan convolution_direct, whose results do not depend on timing.
//
// Winograd rounds differently from the direct method: oneDNN 2.6's F(4x4, 3x3) kernel transforms
// 6x6 input tiles and 3x3 filters with constants up to 5.25 and 1/4 ... 1/24 (and the output
// tiles back), so each output is a sum of larger partial terms that cancel, and its float32
// rounding error is several times the direct method's (docs/x86-backend.md gives the measured
// figures). That is why it is only ever chosen where the user asked for fastrun.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "neomeg/dnn/x86_benchmark_kernel.h"
#include "src/x86/conv_common.h"

namespace neomeg::dnn::x86 {

// The choices measured so far, by case.
class ConvAlgoCache {
public:
    std::optional<dnnl::algorithm> find(const std::string& key) const;
    void put(const std::string& key, dnnl::algorithm alg);
    size_t size() const;  // the cases measured so far
    void clear();         // for tests: measure again

private:
    mutable std::mutex m_mutex;
    std::unordered_map<std::string, dnnl::algorithm> m_choices;
};

// The process's cache.
ConvAlgoCache& conv_algo_cache();

// The case a choice is cached under: the pass ("fwd", "bwd_data", ...; a variant such as fused
// post-ops belongs in it too), the geometry and the layouts of the call.
std::string conv_case_key(std::string_view pass, const ConvDims& g,
                          std::span<const TensorLayout> layouts);

// The best wall time of a few runs of `prim` (planned by `pd`) on scratch memory of the layouts
// it chose, in seconds.
double time_primitive(const dnnl::primitive& prim, const dnnl::primitive_desc& pd,
                      const dnnl::engine& engine, dnnl::stream& stream);

// oneDNN 2.6's Winograd backward-weights kernel writes the filter gradient with non-temporal
// stores, which fault on memory that is not 64-byte aligned. The gradient lands in the plan's
// workspace (a reorder buffer: the caller's filter is plain OIHW, the kernel's is blocked), whose
// base the operator contract aligns to 16 bytes only; wrapped, the plan asks for 64 bytes more and
// starts at the first 64-byte boundary. Other plans are returned as they are.
std::unique_ptr<Plan> aligned_if_winograd(std::unique_ptr<Plan> plan);

// The algorithms a measured choice is made among, the default first.
inline constexpr dnnl::algorithm kConvAlgorithms[] = {dnnl::algorithm::convolution_direct,
                                                      dnnl::algorithm::convolution_winograd};

// make_pd(algorithm) -> a primitive descriptor of type Pd, which may throw dnnl::error where
// oneDNN has no implementation of that algorithm for the case. Off fastrun, the direct method's;
// on, the algorithm measured fastest for `key` (measured now if it has not been yet).
template <class MakePd>
auto choose_conv_pd(HandleImpl& handle, const std::string& key, MakePd&& make_pd)
        -> decltype(make_pd(dnnl::algorithm::convolution_direct)) {
    using Pd = decltype(make_pd(dnnl::algorithm::convolution_direct));
    if (!x86_benchmark_kernel())
        return make_pd(dnnl::algorithm::convolution_direct);
    ConvAlgoCache& cache = conv_algo_cache();
    if (auto alg = cache.find(key)) {
        try {
            return make_pd(*alg);
        } catch (const dnnl::error&) {
            // A choice that cannot be planned again (only a hand-made entry): the default.
            return make_pd(dnnl::algorithm::convolution_direct);
        }
    }
    std::optional<Pd> best;
    dnnl::algorithm best_alg = dnnl::algorithm::convolution_direct;
    double best_time = 0;
    for (dnnl::algorithm alg : kConvAlgorithms) {
        std::optional<Pd> pd;
        try {
            pd = make_pd(alg);
        } catch (const dnnl::error&) {
            continue;  // no implementation of this algorithm for the case
        }
        double t = time_primitive(dnnl::primitive(*pd), *pd, handle.engine(), handle.stream());
        if (!best || t < best_time) {
            best = std::move(pd);
            best_alg = alg;
            best_time = t;
        }
    }
    if (!best)
        return make_pd(dnnl::algorithm::convolution_direct);  // throws oneDNN's error
    cache.put(key, best_alg);
    return *best;
}

}  // namespace neomeg::dnn::x86
