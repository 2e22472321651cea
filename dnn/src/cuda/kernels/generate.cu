// Arange, Linspace and Eye: each element computed from its index, in double as naive does.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__global__ void linear_fill_kernel(void* dst, DT dt, int64_t stride, int64_t n, double start,
                                   double step, bool last_is, double last) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        // Unfused, as the host computes it: an FMA would round differently.
        double v = last_is && i == n - 1
                           ? last
                           : __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
        store_float(dst, dt, i * stride, v);
    }
}

__global__ void eye_kernel(void* dst, DT dt, Strided l, int64_t k) {
    int64_t rows = l.shape[0], cols = l.shape[1], n = rows * cols;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t r = i / cols, c = i % cols;
        store_int(dst, dt, r * l.stride[0] + c * l.stride[1], c - r == k ? 1 : 0);
    }
}

}  // namespace

void linear_fill(void* dst, DT dt, int64_t stride, int64_t n, double start, double step,
                 bool last_is, double last, cudaStream_t stream) {
    if (n)
        linear_fill_kernel<<<grid_for(n), kBlock, 0, stream>>>(dst, dt, stride, n, start, step,
                                                               last_is, last);
}

void eye(void* dst, DT dt, const Strided& layout, int64_t k, cudaStream_t stream) {
    int64_t n = layout.shape[0] * layout.shape[1];
    if (n)
        eye_kernel<<<grid_for(n), kBlock, 0, stream>>>(dst, dt, layout, k);
}

}  // namespace neomeg::dnn::cuda::kern
