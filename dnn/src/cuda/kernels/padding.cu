// Padding and PaddingBackward: every dst element finds the src element it copies (numpy.pad's
// 'constant', 'reflect' and 'edge' rules, as dnn/src/naive/padding.cpp); the backward adds each
// diff element into its source in double with atomics, then rounds once into grad.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ int64_t source_index(PadMode mode, int64_t n, int64_t j) {
    if (j >= 0 && j < n)
        return j;
    switch (mode) {
        case PadMode::CONSTANT:
            return -1;
        case PadMode::REPLICATE:
            return j < 0 ? 0 : n - 1;
        case PadMode::REFLECT: {
            if (n == 1)
                return 0;
            int64_t period = 2 * (n - 1);
            int64_t r = ((j % period) + period) % period;
            return r < n ? r : period - r;
        }
    }
    return -1;
}

// The offsets in src (through src_layout) and in a dense src-shaped buffer of the element that
// padded element i (row-major over `padded`) copies; false on CONSTANT's border.
__device__ __forceinline__ bool source_of(const PaddingArgs& a, const Strided& padded, int64_t i,
                                          int64_t* src_off, int64_t* dense_off, int64_t* pad_off) {
    int64_t s_off = 0, d_off = 0, p_off = 0, dense_stride = 1;
    bool inside = true;
    for (int d = padded.ndim - 1; d >= 0; --d) {
        int64_t j = i % padded.shape[d];
        i /= padded.shape[d];
        p_off += j * padded.stride[d];
        int64_t s = source_index(a.mode, a.src_layout.shape[d], j - a.front[d]);
        if (s < 0)
            inside = false;
        s_off += s * a.src_layout.stride[d];
        d_off += s * dense_stride;
        dense_stride *= a.src_layout.shape[d];
    }
    *src_off = s_off;
    *dense_off = d_off;
    *pad_off = p_off;
    return inside;
}

__device__ __forceinline__ void copy_element(const void* src, int64_t so, void* dst, int64_t d0,
                                             DT dt) {
    switch (dt) {
        case DT::Float32:
        case DT::Int32:
            static_cast<uint32_t*>(dst)[d0] = static_cast<const uint32_t*>(src)[so];
            return;
        case DT::Float16:
        case DT::BFloat16:
        case DT::Int16:
            static_cast<uint16_t*>(dst)[d0] = static_cast<const uint16_t*>(src)[so];
            return;
        default:
            static_cast<uint8_t*>(dst)[d0] = static_cast<const uint8_t*>(src)[so];
            return;
    }
}

__global__ void padding_forward_kernel(PaddingArgs a, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t so, dense, po;
        if (source_of(a, a.dst_layout, i, &so, &dense, &po))
            copy_element(a.src, so, a.dst, po, a.dt);
        else
            store_float(a.dst, a.dt, po, a.value);
    }
}

__global__ void padding_accumulate_kernel(PaddingArgs a, int64_t n, double* acc) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t so, dense, po;
        if (source_of(a, a.dst_layout, i, &so, &dense, &po))
            atomicAdd(acc + dense, static_cast<double>(load_float(a.src, a.dt, po)));
    }
}

__global__ void store_acc_kernel(const double* acc, void* grad, DT dt, Strided gl, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        store_float(grad, dt, offset_of(gl, i), static_cast<float>(acc[i]));
}

}  // namespace

void padding_forward(const PaddingArgs& args, int64_t nr_dst, cudaStream_t stream) {
    if (nr_dst)
        padding_forward_kernel<<<grid_for(nr_dst), kBlock, 0, stream>>>(args, nr_dst);
}

void padding_backward(const PaddingArgs& args, int64_t nr_diff, double* acc, void* grad,
                      const Strided& grad_layout, int64_t nr_grad, cudaStream_t stream) {
    if (nr_grad == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(nr_grad) * sizeof(double), stream));
    if (nr_diff)
        padding_accumulate_kernel<<<grid_for(nr_diff), kBlock, 0, stream>>>(args, nr_diff, acc);
    store_acc_kernel<<<grid_for(nr_grad), kBlock, 0, stream>>>(acc, grad, args.dt, grad_layout,
                                                               nr_grad);
}

}  // namespace neomeg::dnn::cuda::kern
