// Resize and ResizeBackward over NCHW: a thread per destination pixel summing its taps
// (common/resize_taps.h: 1, 2 x 2 or 4 x 4) in double in naive's order (forward), and a thread per
// diff element adding onto its taps with double atomics into a dense accumulator, rounded into
// grad afterwards (backward), as naive sums in double.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

// Rounds a double once into a float dtype, as naive's store (round to odd through float32, then
// to the narrow format) does.
__device__ __forceinline__ void store_rounded(void* p, DT dt, int64_t off, double v) {
    switch (dt) {
        case DT::Float16:
            static_cast<__half*>(p)[off] = __double2half(v);
            return;
        case DT::BFloat16:
            static_cast<__nv_bfloat16*>(p)[off] = __double2bfloat16(v);
            return;
        default:
            static_cast<float*>(p)[off] = static_cast<float>(v);
            return;
    }
}

// Coordinates (n, c, h, w) of element i of an (N, C, H, W) walk.
struct Pixel {
    int64_t n, c, h, w;
};
__device__ __forceinline__ Pixel pixel_of(int64_t i, int64_t c, int64_t h, int64_t w) {
    Pixel p;
    p.w = i % w;
    i /= w;
    p.h = i % h;
    i /= h;
    p.c = i % c;
    p.n = i / c;
    return p;
}

__device__ __forceinline__ int64_t at(const int64_t* s, int64_t n, int64_t c, int64_t h,
                                      int64_t w) {
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__global__ void forward_kernel(ResizeArgs a, const void* src, void* dst, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        Pixel p = pixel_of(i, a.c, a.out_h, a.out_w);
        resize::AxisTaps th = resize::axis_taps(a.mode, a.align_corners, a.in_h, a.out_h, p.h);
        resize::AxisTaps tw = resize::axis_taps(a.mode, a.align_corners, a.in_w, a.out_w, p.w);
        const int64_t* s = a.src_strides;
        double acc = 0;
        for (int i = 0; i < th.n; ++i)
            for (int j = 0; j < tw.n; ++j)
                acc += th.w[i] * tw.w[j] *
                       load_float(src, a.dt, at(s, p.n, p.c, th.idx[i], tw.idx[j]));
        store_rounded(dst, a.dt, at(a.dst_strides, p.n, p.c, p.h, p.w), acc);
    }
}

__global__ void scatter_kernel(ResizeArgs a, const void* diff, double* acc, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        Pixel p = pixel_of(i, a.c, a.out_h, a.out_w);
        resize::AxisTaps th = resize::axis_taps(a.mode, a.align_corners, a.in_h, a.out_h, p.h);
        resize::AxisTaps tw = resize::axis_taps(a.mode, a.align_corners, a.in_w, a.out_w, p.w);
        double g = load_float(diff, a.dt, at(a.dst_strides, p.n, p.c, p.h, p.w));
        // acc is dense (N, C, in_h, in_w).
        int64_t base = (p.n * a.c + p.c) * a.in_h;
        for (int i = 0; i < th.n; ++i)
            for (int j = 0; j < tw.n; ++j)
                atomicAdd(acc + (base + th.idx[i]) * a.in_w + tw.idx[j], th.w[i] * tw.w[j] * g);
    }
}

__global__ void round_kernel(ResizeArgs a, const double* acc, void* grad, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        Pixel p = pixel_of(i, a.c, a.in_h, a.in_w);
        store_rounded(grad, a.dt, at(a.src_strides, p.n, p.c, p.h, p.w), acc[i]);
    }
}

}  // namespace

void resize_forward(const ResizeArgs& a, const void* src, void* dst, cudaStream_t stream) {
    int64_t total = a.n * a.c * a.out_h * a.out_w;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, dst, total);
}

void resize_backward(const ResizeArgs& a, const void* diff, double* acc, void* grad,
                     cudaStream_t stream) {
    int64_t in_total = a.n * a.c * a.in_h * a.in_w, out_total = a.n * a.c * a.out_h * a.out_w;
    if (in_total == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(in_total) * sizeof(double), stream));
    if (out_total)
        scatter_kernel<<<grid_for(out_total), kBlock, 0, stream>>>(a, diff, acc, out_total);
    round_kernel<<<grid_for(in_total), kBlock, 0, stream>>>(a, acc, grad, in_total);
}

}  // namespace neomeg::dnn::cuda::kern
