// The launch arguments of the CUDA Correlation kernels (kernels/correlation.cu): dense NCHW
// float32 data1, data2 (n, c, h, w) and dst or diff (n, (2R + 1)^2, out_h, out_w), with the
// window geometry of src/common/correlation_geometry.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace neomeg::dnn::cuda::kern {

struct CorrelationArgs {
    int64_t n, c, h, w, out_h, out_w;
    int64_t radius, grid_radius, grid_side, stride1, stride2, origin;
    double norm;
    bool multiply;
};

// dst = the correlation, summed in double and rounded once.
void correlation_forward(const CorrelationArgs& a, const float* data1, const float* data2,
                         float* dst, cudaStream_t stream);
// grad = the gradient for data1 (which = 1) or data2 (which = 2), a thread per grad element
// gathering the diff of the outputs whose terms read it.
void correlation_backward(const CorrelationArgs& a, int which, const float* diff,
                          const float* data1, const float* data2, float* grad, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern
