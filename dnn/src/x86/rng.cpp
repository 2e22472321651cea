// UniformRNG and GaussianRNG on x86: float32, float16 and bfloat16, one Philox block per four
// elements (naive computes a block per element), blocks computed several at a time in vectors
// (philox_hwy.cpp) and split across OpenMP threads; element i is still the i-th element of the
// stream, so the numbers are naive's whatever the split. Gaussian values are Box-Muller on the two
// word pairs of a block with the same float operations as philox::gaussian_at (the C library's
// logf, sqrtf, sinf, cosf), so they are naive's bit for bit; a vector math library would round
// differently. A value reaches a 16-bit dst as naive's does (computed in float, then converted;
// a uniform value keeps only the bits the dtype's significand holds). A strided dst is generated
// dense in the workspace and copied into place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "neomeg/dnn/operators/random.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/philox.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/philox_hwy.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

bool float_dtype(DType dt) {
    return dt == dtype::Float32 || dt == dtype::Float16 || dt == dtype::BFloat16;
}

// Random bits a uniform value keeps: more than the significand holds could round up to 1
// (naive's significand_bits).
int significand_bits(DType dt) {
    return dt == dtype::Float16 ? 11 : dt == dtype::BFloat16 ? 8 : 24;
}

// A strided dst is generated dense in the workspace first.
size_t staging_bytes(const TensorLayout& dst) {
    return dst.is_contiguous() ? 0 : dst.total_nr_elems() * dst.dtype.size();
}

// Runs gen(pointer to dst's elements as T, element count) on dst, or on a dense buffer in the
// workspace copied into a strided dst afterwards.
template <class Gen>
void generate_into(const TensorND& dst, Workspace ws, Gen&& gen) {
    TensorND target = dst;
    if (!dst.layout.is_contiguous())
        target = TensorND(ws.ptr, TensorLayout(dst.layout, dst.layout.dtype));
    dispatch_float(dst.layout.dtype, "RNG", [&](auto tag) {
        using T = typename decltype(tag)::type;
        gen(static_cast<T*>(target.raw_ptr()), dst.layout.total_nr_elems());
    });
    if (target.raw_ptr() != dst.raw_ptr())
        (void)relayout_copy(target, dst);
}

// Calls f(words of the block, first element, element count) for the Philox blocks of n elements,
// in parallel; `cost` is the work per element in simple operations.
template <class F>
void for_blocks(uint64_t seed, size_t n, size_t cost, F&& f) {
    constexpr size_t kChunk = 256;  // blocks computed at once: 4 KiB of words
    const size_t blocks = (n + 3) / 4;
    parallel_ranges(blocks, n * cost, kParallelGrain, [&](size_t b, size_t e) {
        uint32_t words[4 * kChunk];
        for (size_t c = b; c < e; c += kChunk) {
            size_t m = std::min(kChunk, e - c);
            philox_words(seed, c, m, words);
            for (size_t blk = c; blk < c + m; ++blk)
                f(words + 4 * (blk - c), blk * 4, std::min(n, blk * 4 + 4) - blk * 4);
        }
    });
}

class UniformRNGImpl final : public LoopKernel<UniformRNG> {
public:
    using LoopKernel::LoopKernel;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return std::max(LoopKernel::get_workspace_in_bytes(inputs, outputs),
                        staging_bytes(outputs[0]));
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!float_dtype(outputs[0].layout.dtype))
            return run_naive(inputs, outputs, ws);
        const uint64_t seed = m_param.seed;
        const int bits = significand_bits(outputs[0].layout.dtype);
        generate_into(outputs[0], ws, [&](auto* y, size_t n) {
            using T = std::remove_pointer_t<decltype(y)>;
            for_blocks(seed, n, 4, [&](const uint32_t* words, size_t i0, size_t k) {
                for (size_t w = 0; w < k; ++w)
                    y[i0 + w] = static_cast<T>(philox::unit_interval(words[w], bits));
            });
        });
        m_last = "loop";
    }
};

class GaussianRNGImpl final : public LoopKernel<GaussianRNG> {
public:
    using LoopKernel::LoopKernel;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return std::max(LoopKernel::get_workspace_in_bytes(inputs, outputs),
                        staging_bytes(outputs[0]));
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!float_dtype(outputs[0].layout.dtype))
            return run_naive(inputs, outputs, ws);
        const uint64_t seed = m_param.seed;
        const double mean = m_param.mean, std_dev = m_param.std;
        generate_into(outputs[0], ws, [&](auto* y, size_t n) {
            using T = std::remove_pointer_t<decltype(y)>;
            for_blocks(seed, n, 64, [&](const uint32_t* bits, size_t i0, size_t k) {
                philox::Block b{{bits[0], bits[1], bits[2], bits[3]}};
                float g[4];
                for (unsigned pair = 0; pair < 4; pair += 2) {
                    // philox::gaussian_at's formula, once per pair instead of once per element.
                    float u1 = float((b.w[pair] >> 8) + 1u) * (1.0f / 16777216.0f);
                    float u2 = philox::unit_interval(b.w[pair + 1], 24);
                    float r = std::sqrt(-2.0f * std::log(u1));
                    float theta = 6.283185307179586f * u2;
                    g[pair] = r * std::cos(theta);
                    g[pair + 1] = r * std::sin(theta);
                }
                for (size_t w = 0; w < k; ++w)
                    y[i0 + w] = static_cast<T>(static_cast<float>(mean + std_dev * double(g[w])));
            });
        });
        m_last = "loop";
    }
};

}  // namespace
NM_REGISTER_X86(UniformRNG, UniformRNGImpl);
NM_REGISTER_X86(GaussianRNG, GaussianRNGImpl);
}  // namespace neomeg::dnn::x86
