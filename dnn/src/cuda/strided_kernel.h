// The frame of the CUDA kernels that take every layout (any strides and float dtype: ROIAlign,
// ROIPooling, Remap, WarpPerspective, the deformable and region-restricted convolutions and
// their gradients), and of the gradients that sum into a double accumulator in the workspace,
// one per element of output 0.
#pragma once

#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {

template <class Op, bool kDoubleAccumulator = false>
class StridedKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return kDoubleAccumulator ? out[0].total_nr_elems() * sizeof(double) : 0;
    }
};

}  // namespace neomeg::dnn::cuda
