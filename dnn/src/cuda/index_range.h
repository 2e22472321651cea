// The range check of the indexing operators' index tensors on the device, reported as naive
// reports it (check_index_values in src/naive/indexing.h): an IndexError naming the operator, the
// first bad value in row-major order of the first index tensor that has one, its axis and that
// axis's size. It waits for the stream, since the error must come from exec and nothing may be
// written before every index is known to be good.
#pragma once

#include <span>
#include <string>

#include "src/cuda/handle.h"

namespace neomeg::dnn::cuda {

class IndexRangeCheck {
public:
    IndexRangeCheck() = default;
    IndexRangeCheck(const IndexRangeCheck&) = delete;
    IndexRangeCheck& operator=(const IndexRangeCheck&) = delete;
    ~IndexRangeCheck();

    // Index tensor k indexes axis axes[k] of size sizes[k]; values must lie in [0, size), or in
    // [-size, size) when negatives wrap.
    void run(std::span<const TensorND> indices, std::span<const size_t> axes,
             std::span<const size_t> sizes, bool negative_wraps, const std::string& who,
             cudaStream_t stream);

private:
    unsigned long long* m_first = nullptr;
};

}  // namespace neomeg::dnn::cuda
