#include "src/x86/conv_algo.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace neomeg::dnn::x86 {
namespace {

class AlignedWorkspacePlan final : public Plan {
public:
    explicit AlignedWorkspacePlan(std::unique_ptr<Plan> plan) : m_plan(std::move(plan)) {}
    size_t workspace_in_bytes() const override { return m_plan->workspace_in_bytes() + kAlign; }
    size_t scratchpad_in_bytes() const override { return m_plan->scratchpad_in_bytes(); }
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

// The default rule's bounds, from `neomeg_conv_algorithms` (oneDNN 2.6, AVX-512, one and two
// threads; docs/x86-backend-log.md, "Convolution algorithms", has the tables). Below 32 channels
// Winograd lost the forward and data passes (16 and 3 channels); up to 1024 it won every pass
// by 1.3-2.5x on images of 7x7 and more at batch 32; larger it was not measured.
constexpr size_t kMinChannels = 32, kMaxChannels = 1024;
struct TileBounds {
    size_t min_tiles;   // 4x4 output tiles in the whole batch
    double min_filled;  // the fraction of the tiles' outputs inside the image
};
// Forward and data gradient: at batch 32, 4x4 images (32 tiles) lost by 10-30% and 8x8 ones (128)
// won by 1.4-1.7x; at batch 16 8x8 ones (64 tiles) won by 1.3x and 7x7 ones tied; at batch 1,
// 56x56 (196 tiles) won by 1.9x and 32x32 (64) tied. A 7x7 image fills 77% of its tiles and won
// by 1.4x, a 6x6 one 56% and tied, a 5x5 one 39% and lost by 1.5x.
constexpr TileBounds kDataBounds = {96, 0.7};
// Filter gradient: the direct kernel is slower on small images, so Winograd won by 1.3-2.2x on
// 4x4 images at batch 16 and 32 (16 and 32 tiles) and lost at batch 8 (8 tiles); 6x6 images won
// by 1.4-1.6x, 5x5 ones by only 1.2x.
constexpr TileBounds kFilterBounds = {32, 0.5};
// Forward with a constant filter (oneDNN's inference form, the filter transformed once, not per
// call): at batch 1 it won from 7x7 images (4 tiles; 1.1-2.3x on 56x56 to 7x7 and 32x32 to 8x8)
// and tied on 4x4 (1 tile); at batch 32 on 4x4 it won by 2.2x.
constexpr TileBounds kConstFilterBounds = {4, 0.5};

}  // namespace

bool winograd_enabled() {
    const char* v = std::getenv("NEOMEG_CONV_WINOGRAD");
    if (!v || !*v || std::string_view(v) == "1")
        return true;
    if (std::string_view(v) == "0")
        return false;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        std::fprintf(stderr,
                     "neomeg: NEOMEG_CONV_WINOGRAD=%s is neither 0 nor 1; Winograd stays on\n", v);
    return true;
}

dnnl::algorithm default_conv_algorithm(ConvPass pass, const ConvDims& g, const TensorLayout& src,
                                       const TensorLayout& filter, const TensorLayout& dst) {
    constexpr auto direct = dnnl::algorithm::convolution_direct;
    if (src.ndim != 4 || filter.ndim != 4 || dst.ndim != 4 || src.dtype != dtype::Float32 ||
        g.group != 1 || filter[2] != 3 || filter[3] != 3)
        return direct;
    for (size_t d = 0; d < 2; ++d)
        if (g.stride[d] != 1 || g.dilate[d] != 0)
            return direct;
    const size_t ic = src[1], oc = dst[1];
    if (std::min(ic, oc) < kMinChannels || std::max(ic, oc) > kMaxChannels)
        return direct;
    const size_t oh = dst[2], ow = dst[3];
    const size_t tiles_h = (oh + 3) / 4, tiles_w = (ow + 3) / 4;
    const size_t tiles = dst[0] * tiles_h * tiles_w;
    const double filled = double(oh * ow) / double(16 * tiles_h * tiles_w);
    const TileBounds& b = pass == ConvPass::backward_filter        ? kFilterBounds
                          : pass == ConvPass::forward_const_filter ? kConstFilterBounds
                                                                   : kDataBounds;
    return tiles >= b.min_tiles && filled >= b.min_filled ? dnnl::algorithm::convolution_winograd
                                                          : direct;
}

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
