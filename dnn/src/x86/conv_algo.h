// Which algorithm the oneDNN convolutions (forward, both backward passes, ConvBias and the
// channel-blocked forms, eager and traced alike) plan for a case.
//
// By default, a rule on the shape alone (default_conv_algorithm: no timing, the same answer on
// every run and every CPU): oneDNN's Winograd F(4x4, 3x3) where it clearly wins on the shapes we
// measured (docs/x86-backend-log.md, "Convolution algorithms", `neomeg_conv_algorithms`), direct
// elsewhere: a 3x3 float32
// convolution of stride 1, dilation 1 and one group, between 32 and 1024 channels in and out,
// with enough 4x4 output tiles in the batch to pay for transforming the filter on each call (a
// fixed cost in proportion to IC x OC, which lost 2-6x at batch 1 on 8x8 and 14x14 images) and
// few of their outputs cropped away (a 5x5 or 6x6 output computes 8x8). The filter gradient's
// direct kernel is slower than the other two passes' on small images, so its bounds are lower;
// a constant filter (inference) is transformed once, so its forward needs only a few tiles.
// Where oneDNN has no Winograd implementation for the case (a CPU without AVX-512,
// ONEDNN_MAX_CPU_ISA capped below it), the direct one plans instead, silently. (A traced graph's
// constant filter takes oneDNN's inference form, jit_fp32_wino_2x3, filter transformed once.)
// NEOMEG_CONV_WINOGRAD=0 turns Winograd off altogether, for whoever needs the direct method's
// rounding.
//
// MegEngine's fastrun (x86_benchmark_kernel(), switched by megengine.config.benchmark_kernel)
// overrides the rule: the first time a case is planned, every algorithm oneDNN implements for it
// (convolution_direct and, where it has one, convolution_winograd) is timed on scratch memory and
// the fastest is kept for that case, process-wide, whichever operator object (an eager op, a
// traced graph's node, on any x86 handle) plans it next.
//
// Winograd rounds differently from the direct method: oneDNN 2.6's F(4x4, 3x3) kernel transforms
// 6x6 input tiles and 3x3 filters with constants up to 5.25 and 1/4 ... 1/24 (and the output
// tiles back), so each output is a sum of larger partial terms that cancel, and its float32
// rounding error is several times the direct method's: about 1e-6 of the output's largest
// magnitude against 3e-7 (docs/x86-backend-log.md, "Convolution algorithms", gives the measured
// figures), far below what
// float32 training notices; cuDNN's and MegEngine's own heuristics pick Winograd for such shapes
// too.
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

// Whether Winograd may be chosen at all: NEOMEG_CONV_WINOGRAD unset, empty or 1 says yes, 0 says
// no (any other value warns once and counts as unset). Read on every plan, which happens once per
// operator and shape: set it before the first run.
bool winograd_enabled();

// The rule above: convolution_winograd or convolution_direct for the convolution whose forward
// form reads `src` (N, IC, H, W) with `filter` (OC, IC, KH, KW) into `dst` (N, OC, OH, OW),
// plain shapes (a blocked operator passes its tensors' plain forms), for `pass`. Shapes only:
// neither the CPU nor winograd_enabled() enters.
dnnl::algorithm default_conv_algorithm(ConvPass pass, const ConvDims& g, const TensorLayout& src,
                                       const TensorLayout& filter, const TensorLayout& dst);

// The algorithms a measured choice is made among, direct first.
inline constexpr dnnl::algorithm kConvAlgorithms[] = {dnnl::algorithm::convolution_direct,
                                                      dnnl::algorithm::convolution_winograd};

// make_pd(algorithm) -> a primitive descriptor of type Pd, which may throw dnnl::error where
// oneDNN has no implementation of that algorithm for the case. Off fastrun, `preferred` (the
// default rule's choice, default_conv_algorithm) where oneDNN plans it, else direct; on, the
// algorithm measured fastest for `key` (measured now if it has not been yet). Direct, with
// nothing measured, while !winograd_enabled().
template <class MakePd>
auto choose_conv_pd(HandleImpl& handle, const std::string& key, dnnl::algorithm preferred,
                    MakePd&& make_pd) -> decltype(make_pd(dnnl::algorithm::convolution_direct)) {
    using Pd = decltype(make_pd(dnnl::algorithm::convolution_direct));
    if (!winograd_enabled())
        return make_pd(dnnl::algorithm::convolution_direct);  // nothing else to choose
    if (!x86_benchmark_kernel()) {
        if (preferred == dnnl::algorithm::convolution_winograd) {
            try {
                return make_pd(preferred);
            } catch (const dnnl::error&) {
                // No Winograd kernel for the case on this CPU: the direct one, as off.
            }
        }
        return make_pd(dnnl::algorithm::convolution_direct);
    }
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
