// The launch arguments of the CUDA DeformablePSROIPooling kernels (kernels/psroi.cu): dense
// float32 src (batch, c, h, w), rois (k, 5), trans of trans_elems elements, (t, 2, ph, pw)
// where read (unless no_trans), and dst, count and diff (k, c, ph, pw).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace neomeg::dnn::cuda::kern {

struct PsroiArgs {
    int64_t k, c, batch, h, w, ph, pw, trans_elems;
    float spatial_scale, trans_std;
    uint32_t part_size, sample_per_part;
    bool no_trans;
};

// dst = each bin's mean sample (in double, 0 where none is taken), count = the samples taken.
void psroi_forward(const PsroiArgs& a, const float* src, const float* rois, const float* trans,
                   float* dst, float* count, cudaStream_t stream);
// acc (src's then trans's elements, dense, zeroed here) += the gradients (double atomics), then
// src_grad and trans_grad = acc rounded once.
void psroi_backward(const PsroiArgs& a, const float* src, const float* rois, const float* trans,
                    const float* diff, const float* count, double* acc, float* src_grad,
                    float* trans_grad, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern
