// PermutationRNG on x86: naive's permutation exactly (0..n-1 ordered by a 64-bit Philox key per
// index, ties by index), its keys drawn by the vectorised Philox (philox_hwy.h) across OpenMP
// threads and sorted as 128-bit (key, index) pairs by vqsort, so the order is the same total
// order naive's comparison sort gives. int32 or float32 dst, any stride.
#include <hwy/contrib/sort/vqsort.h>

#include <vector>

#include "neomeg/dnn/operators/random.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/philox_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

class PermutationRNGImpl final : public LoopKernel<PermutationRNG> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        const size_t n = dst.layout[0];
        const ptrdiff_t stride = dst.layout.stride[0];
        m_last = "vqsort";
        if (n == 0)
            return;
        // Index i's key is words 2i and 2i + 1 of the stream: block i / 2 holds two keys.
        const size_t blocks = (n + 1) / 2;
        std::vector<uint32_t> words(blocks * 4);
        parallel_ranges(blocks, blocks * 40, kParallelGrain, [&](size_t b, size_t e) {
            philox_words(m_param.seed, b, e - b, words.data() + 4 * b);
        });
        std::vector<hwy::uint128_t> keys(n);
        parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i)
                keys[i] = {i, (uint64_t{words[2 * i]} << 32) | words[2 * i + 1]};
        });
        hwy::Sorter()(keys.data(), n, hwy::SortAscending());
        auto write = [&](auto* d) {
            using T = std::remove_pointer_t<decltype(d)>;
            parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t j = b; j < e; ++j)
                    d[static_cast<ptrdiff_t>(j) * stride] = static_cast<T>(keys[j].lo);
            });
        };
        if (dst.layout.dtype == dtype::Int32)
            write(static_cast<dt_int32*>(dst.raw_ptr()));
        else
            write(static_cast<dt_float32*>(dst.raw_ptr()));
    }
};

}  // namespace
NM_REGISTER_X86(PermutationRNG, PermutationRNGImpl);
}  // namespace neomeg::dnn::x86
