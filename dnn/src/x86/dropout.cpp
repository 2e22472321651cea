// DropoutForward and DropoutBackward on x86: float32 with contiguous tensors, element by element as
// naive (the Philox word of element i decides, so the split across OpenMP threads does not change
// the mask; the scale multiplies in double), but over raw pointers with the Philox words of a
// chunk of elements computed at once by the vectorised generator (philox_hwy.h) and the element
// loops vectorised (dropout_hwy.h). Other dtypes and
// strided tensors go to naive.
#include <algorithm>
#include <cstdint>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/all_contiguous.h"
#include "src/x86/dropout_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/philox_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// 1 / (1 - p), or 0 when every element is dropped (naive's keep_scale).
double keep_scale(float p) {
    return p < 1.f ? 1.0 / (1.0 - double(p)) : 0.0;
}

class DropoutForwardImpl final : public LoopKernel<DropoutForward> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (inputs[0].layout.dtype != dtype::Float32 || !all_contiguous(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        const auto* x = static_cast<const float*>(inputs[0].raw_ptr());
        auto* y = static_cast<float*>(outputs[0].raw_ptr());
        auto* mask = static_cast<uint8_t*>(outputs[1].raw_ptr());
        const size_t n = inputs[0].layout.total_nr_elems();
        const double scale = keep_scale(m_param.drop_prob);
        const float p = m_param.drop_prob;
        const uint64_t seed = m_param.seed;
        // Whole Philox blocks of four elements (the last may be partial), their words computed a
        // chunk at a time by the vectorised generator, then the chunk's elements (dropout_hwy.h).
        constexpr size_t kChunk = 256;  // blocks: 4 KiB of words
        const size_t blocks = (n + 3) / 4;
        const float threshold = p;
        parallel_ranges(blocks, n * 16, kParallelGrain, [&](size_t b, size_t e) {
            uint32_t words[4 * kChunk];
            for (size_t c = b; c < e; c += kChunk) {
                const size_t m = std::min(kChunk, e - c);
                philox_words(seed, c, m, words);
                const size_t i0 = c * 4, len = std::min(n, (c + m) * 4) - i0;
                dropout_keep(words, x + i0, threshold, scale, mask + i0, y + i0, len);
            }
        });
        m_last = "loop";
    }
};

class DropoutBackwardImpl final : public LoopKernel<DropoutBackward> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (inputs[0].layout.dtype != dtype::Float32 || inputs[1].layout.dtype != dtype::Uint8 ||
            !all_contiguous(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        const auto* dy = static_cast<const float*>(inputs[0].raw_ptr());
        const auto* mask = static_cast<const uint8_t*>(inputs[1].raw_ptr());
        auto* g = static_cast<float*>(outputs[0].raw_ptr());
        const size_t n = inputs[0].layout.total_nr_elems();
        const double scale = keep_scale(m_param.drop_prob);
        parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
            dropout_grad(dy + b, mask + b, scale, g + b, e - b);
        });
        m_last = "loop";
    }
};

}  // namespace
NM_REGISTER_X86(DropoutForward, DropoutForwardImpl);
NM_REGISTER_X86(DropoutBackward, DropoutBackwardImpl);
}  // namespace neomeg::dnn::x86
