// Pooling with windows of our own (adaptive pooling; fixed windows run on cuDNN), forward and
// backward, as dnn/src/naive/pooling.cpp: sums in double, the first maximum of a window (a NaN
// counts as the maximum), the backward summed per src element in double with atomics and stored
// once.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

struct Strides5 {
    int64_t s[5];
};

struct Window {
    int64_t lo[3], hi[3];
};

__device__ __forceinline__ Window window_of(const PoolArgs& a, const int64_t* o) {
    Window w;
    for (int d = 0; d < 3; ++d) {
        int64_t first, last;
        if (a.adaptive) {  // adaptive_range (src/common/pooling.h): MegEngine's windows
            if (a.in[d] >= a.out[d]) {
                int64_t stride = a.in[d] / a.out[d];
                first = o[d] * stride;
                last = first + a.in[d] - (a.out[d] - 1) * stride;
            } else {
                first = o[d] * a.in[d] / a.out[d];
                last = ((o[d] + 1) * a.in[d] + a.out[d] - 1) / a.out[d];
            }
        } else {
            first = o[d] * a.stride[d] - a.pad[d];
            last = first + a.window[d];
        }
        w.lo[d] = first < 0 ? 0 : first;
        w.hi[d] = last > a.in[d] ? a.in[d] : last;
    }
    return w;
}

// Decodes output index i into (n, c, o[3]).
__device__ __forceinline__ void decode(const PoolArgs& a, int64_t i, int64_t& n, int64_t& c,
                                       int64_t* o) {
    for (int d = 2; d >= 0; --d) {
        o[d] = i % a.out[d];
        i /= a.out[d];
    }
    c = i % a.c;
    n = i / a.c;
}

__device__ __forceinline__ int64_t off5(const int64_t* s, int64_t n, int64_t c, int64_t d0,
                                        int64_t d1, int64_t d2) {
    return n * s[0] + c * s[1] + d0 * s[2] + d1 * s[3] + d2 * s[4];
}

__device__ __forceinline__ double load_d(const PoolArgs& a, int64_t off) {
    return static_cast<double>(load_float(a.src, a.dt, off));
}

// The window's first maximum (row-major) and its position as a dense (D, H, W) index.
__device__ __forceinline__ double window_max(const PoolArgs& a, const Window& w, int64_t n,
                                             int64_t c, int64_t* at) {
    double best = 0;
    bool first = true;
    for (int64_t i0 = w.lo[0]; i0 < w.hi[0]; ++i0)
        for (int64_t i1 = w.lo[1]; i1 < w.hi[1]; ++i1)
            for (int64_t i2 = w.lo[2]; i2 < w.hi[2]; ++i2) {
                double v = load_d(a, off5(a.src_strides, n, c, i0, i1, i2));
                if (first || (best == best && (v != v || v > best))) {
                    best = v;
                    *at = (i0 * a.in[1] + i1) * a.in[2] + i2;
                    first = false;
                }
            }
    return best;
}

__device__ __forceinline__ int64_t divisor(const PoolArgs& a, const Window& w) {
    if (a.reduce == PoolReduce::Average)
        return a.window[0] * a.window[1] * a.window[2];
    return (w.hi[0] - w.lo[0]) * (w.hi[1] - w.lo[1]) * (w.hi[2] - w.lo[2]);
}

__global__ void pool_forward_kernel(PoolArgs a, void* dst, Strides5 ds, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t n, c, o[3];
        decode(a, i, n, c, o);
        Window w = window_of(a, o);
        double v;
        if (a.reduce == PoolReduce::Max) {
            int64_t at;
            v = window_max(a, w, n, c, &at);
        } else {
            double sum = 0;
            for (int64_t i0 = w.lo[0]; i0 < w.hi[0]; ++i0)
                for (int64_t i1 = w.lo[1]; i1 < w.hi[1]; ++i1)
                    for (int64_t i2 = w.lo[2]; i2 < w.hi[2]; ++i2)
                        sum += load_d(a, off5(a.src_strides, n, c, i0, i1, i2));
            v = sum / static_cast<double>(divisor(a, w));
        }
        store_float(dst, a.dt, off5(ds.s, n, c, o[0], o[1], o[2]), v);
    }
}

__global__ void pool_backward_kernel(PoolArgs a, const void* diff, Strides5 ys, double* acc,
                                     int64_t total) {
    int64_t plane = a.in[0] * a.in[1] * a.in[2];
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t n, c, o[3];
        decode(a, i, n, c, o);
        Window w = window_of(a, o);
        double dy = static_cast<double>(load_float(diff, a.dt, off5(ys.s, n, c, o[0], o[1], o[2])));
        double* base = acc + (n * a.c + c) * plane;
        if (a.reduce == PoolReduce::Max) {
            int64_t at = 0;
            window_max(a, w, n, c, &at);
            atomicAdd(base + at, dy);
            continue;
        }
        double share = dy / static_cast<double>(divisor(a, w));
        for (int64_t i0 = w.lo[0]; i0 < w.hi[0]; ++i0)
            for (int64_t i1 = w.lo[1]; i1 < w.hi[1]; ++i1)
                for (int64_t i2 = w.lo[2]; i2 < w.hi[2]; ++i2)
                    atomicAdd(base + (i0 * a.in[1] + i1) * a.in[2] + i2, share);
    }
}

__global__ void pool_store_kernel(PoolArgs a, const double* acc, void* grad, Strides5 gs,
                                  int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t rest = i, p[3];
        for (int d = 2; d >= 0; --d) {
            p[d] = rest % a.in[d];
            rest /= a.in[d];
        }
        int64_t c = rest % a.c, n = rest / a.c;
        store_float(grad, a.dt, off5(gs.s, n, c, p[0], p[1], p[2]), acc[i]);
    }
}

Strides5 strides5(const int64_t* s) {
    Strides5 r;
    for (int i = 0; i < 5; ++i)
        r.s[i] = s[i];
    return r;
}

}  // namespace

void pool_forward(const PoolArgs& a, void* dst, const int64_t* dst_strides, cudaStream_t stream) {
    int64_t total = a.n * a.c * a.out[0] * a.out[1] * a.out[2];
    if (total)
        pool_forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, dst, strides5(dst_strides),
                                                                    total);
}

void pool_backward(const PoolArgs& a, const void* diff, const int64_t* diff_strides, double* acc,
                   void* grad, const int64_t* grad_strides, cudaStream_t stream) {
    int64_t in_total = a.n * a.c * a.in[0] * a.in[1] * a.in[2];
    int64_t out_total = a.n * a.c * a.out[0] * a.out[1] * a.out[2];
    if (in_total == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(in_total) * sizeof(double), stream));
    if (out_total)
        pool_backward_kernel<<<grid_for(out_total), kBlock, 0, stream>>>(
                a, diff, strides5(diff_strides), acc, out_total);
    pool_store_kernel<<<grid_for(in_total), kBlock, 0, stream>>>(a, acc, grad,
                                                                 strides5(grad_strides), in_total);
}

}  // namespace neomeg::dnn::cuda::kern
