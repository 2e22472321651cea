#include "src/x86/conv_filter_chunks.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace neomeg::dnn::x86 {
namespace {

bool is_winograd(const Plan& plan) {
    return std::string_view(plan.name()).find("wino") != std::string_view::npos;
}

// One plan run on each of `chunks` consecutive slices of the output channels: diff's and the
// gradient's, with src whole. The slices are views of the call's tensors (the plan stages a
// strided one where its kernel needs it dense), and share one workspace in turn.
class OutputChannelChunksPlan final : public Plan {
public:
    OutputChannelChunksPlan(std::unique_ptr<Plan> chunk, size_t chunks, TensorLayout diff_chunk,
                            TensorLayout grad_chunk)
        : m_chunk(std::move(chunk)),
          m_chunks(chunks),
          m_diff(diff_chunk),
          m_grad(grad_chunk),
          m_name(std::string(m_chunk->name()) + " in " + std::to_string(chunks) +
                 " output-channel slices") {}
    size_t workspace_in_bytes() const override { return m_chunk->workspace_in_bytes(); }
    size_t scratchpad_in_bytes() const override { return m_chunk->scratchpad_in_bytes(); }
    const char* name() const override { return m_name.c_str(); }
    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        auto* diff = static_cast<char*>(tensors[1].raw_ptr());
        auto* grad = static_cast<char*>(tensors[2].raw_ptr());
        const size_t diff_step = m_diff.dtype.size(m_diff[1] * m_diff.stride[1]);
        const size_t grad_step = m_grad.dtype.size(m_grad[0] * m_grad.stride[0]);
        for (size_t k = 0; k < m_chunks; ++k) {
            const TensorND slice[] = {tensors[0], TensorND(diff + k * diff_step, m_diff),
                                      TensorND(grad + k * grad_step, m_grad)};
            m_chunk->run(slice, ws, stream);
        }
    }

private:
    std::unique_ptr<Plan> m_chunk;
    size_t m_chunks;
    TensorLayout m_diff, m_grad;
    std::string m_name;
};

}  // namespace

size_t winograd_filter_scratch_budget() {
    constexpr size_t kDefaultMiB = 32;
    const char* v = std::getenv("NEOMEG_WINOGRAD_SCRATCH_MB");
    if (!v || !*v)
        return kDefaultMiB << 20;
    char* end = nullptr;
    const long long mib = std::strtoll(v, &end, 10);
    if (*end || mib <= 0) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            std::fprintf(stderr,
                         "neomeg: NEOMEG_WINOGRAD_SCRATCH_MB=%s is not a positive integer; the "
                         "budget stays %zu MiB\n",
                         v, kDefaultMiB);
        return kDefaultMiB << 20;
    }
    return static_cast<size_t>(mib) << 20;
}

std::unique_ptr<Plan> split_filter_gradient(std::unique_ptr<Plan> whole,
                                            std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out, size_t diff_granule,
                                            const FilterGradPlanner& make) {
    const size_t budget = winograd_filter_scratch_budget();
    if (!whole || !is_winograd(*whole) || whole->scratchpad_in_bytes() <= budget ||
        out[0].ndim != 4 || in[1].ndim < 4 || diff_granule == 0)
        return whole;
    const TensorLayout &diff = in[1], &grad = out[0];
    const size_t oc = grad[0];
    if (diff[1] * diff_granule != oc)
        return whole;
    // Halves, quarters, ... (each slice a whole number of diff's channel indices) until one keeps
    // within the budget, or the last that stayed Winograd (slices too narrow leave it: the rule
    // wants 32 channels) and saved memory.
    std::unique_ptr<Plan> best = std::move(whole);
    size_t best_chunks = 1;
    TensorLayout best_diff, best_grad;
    for (size_t chunks = 2;
         best->scratchpad_in_bytes() > budget && oc % (chunks * diff_granule) == 0; chunks *= 2) {
        TensorLayout diff_chunk = diff, grad_chunk = grad;
        diff_chunk[1] = diff[1] / chunks;
        grad_chunk[0] = oc / chunks;
        const TensorLayout chunk_in[] = {in[0], diff_chunk}, chunk_out[] = {grad_chunk};
        std::unique_ptr<Plan> chunk;
        try {
            chunk = make(chunk_in, chunk_out);
        } catch (const dnnl::error&) {  // a slice oneDNN cannot plan: keep the best so far
        }
        if (!chunk || !is_winograd(*chunk) ||
            chunk->scratchpad_in_bytes() >= best->scratchpad_in_bytes())
            break;
        best = std::move(chunk);
        best_chunks = chunks;
        best_diff = diff_chunk;
        best_grad = grad_chunk;
    }
    if (best_chunks == 1)
        return best;
    return std::make_unique<OutputChannelChunksPlan>(std::move(best), best_chunks, best_diff,
                                                     best_grad);
}

}  // namespace neomeg::dnn::x86
