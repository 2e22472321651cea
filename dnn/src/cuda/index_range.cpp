#include "src/cuda/index_range.h"

#include <array>
#include <vector>

#include "src/cuda/kernels/indexed_walk.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {

IndexRangeCheck::~IndexRangeCheck() {
    if (m_first)
        cudaFree(m_first);
}

void IndexRangeCheck::run(std::span<const TensorND> indices, std::span<const size_t> axes,
                          std::span<const size_t> sizes, bool negative_wraps,
                          const std::string& who, cudaStream_t stream) {
    if (indices.empty())
        return;
    if (!m_first) {
        void* p = nullptr;
        NM_CUDA_CHECK(cudaMalloc(&p, kern::kMaxNdim * sizeof(unsigned long long)));
        m_first = static_cast<unsigned long long*>(p);
    }
    std::vector<kern::IndexRange> ranges;
    for (size_t k = 0; k < indices.size(); ++k) {
        auto n = static_cast<int64_t>(sizes[k]);
        kern::IndexRange r{};
        r.index = static_cast<const int32_t*>(indices[k].raw_ptr());
        r.layout = collapse_jointly({indices[k].layout})[0];
        r.n = static_cast<int64_t>(indices[k].layout.total_nr_elems());
        r.lo = negative_wraps ? -n : 0;
        r.hi = n;
        ranges.push_back(r);
    }
    kern::find_bad_index(ranges.data(), static_cast<int>(ranges.size()), m_first, stream);
    NM_CUDA_CHECK(cudaGetLastError());
    std::array<unsigned long long, kern::kMaxNdim> first{};
    NM_CUDA_CHECK(cudaMemcpyAsync(first.data(), m_first,
                                  indices.size() * sizeof(unsigned long long),
                                  cudaMemcpyDeviceToHost, stream));
    NM_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t k = 0; k < indices.size(); ++k) {
        if (first[k] == ~0ull)
            continue;
        auto v = static_cast<int32_t>(static_cast<uint32_t>(first[k] & 0xffffffffu));
        throw IndexError(str_cat(who, ": index ", static_cast<int64_t>(v),
                                 " is out of bounds for axis ", axes[k], " with size ", sizes[k]));
    }
}

}  // namespace neomeg::dnn::cuda
