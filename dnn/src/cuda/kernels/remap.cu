// Remap and its gradients over NCHW, in double as naive computes (src/naive/remap.cpp): a thread
// per output pixel and channel summing its taps (forward), a thread per diff element adding onto
// its taps with double atomics into a dense accumulator rounded into grad afterwards
// (BackwardData), and a thread per map point summing its channels' slopes (BackwardMat).
#include "src/common/border.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

// The point map_xy[n, h, w] and its taps; NEAREST has one, row[0] / col[0].
struct Point {
    bool finite;
    int taps;  // per axis: 2 (LINEAR) or 1 (NEAREST)
    double fx, fy;
    int64_t row[2], col[2];

    __device__ double weight(int i, int j) const {
        if (taps == 1)
            return 1.0;
        return __dmul_rn(i ? fy : 1 - fy, j ? fx : 1 - fx);
    }
};

__device__ Point point_of(const RemapArgs& a, const float* map_xy, int64_t n, int64_t h,
                          int64_t w) {
    Point p{};
    const int64_t* s = a.map_strides;
    int64_t base = n * s[0] + h * s[1] + w * s[2];
    double x = map_xy[base], y = map_xy[base + s[3]];
    p.finite = isfinite(x) && isfinite(y);
    if (!p.finite)
        return p;
    if (a.nearest) {
        p.taps = 1;
        // rint rounds halves to even, as naive's nearbyint.
        p.row[0] = border::index(a.bmode, border::clamp_far(rint(y)), a.in_h);
        p.col[0] = border::index(a.bmode, border::clamp_far(rint(x)), a.in_w);
        return p;
    }
    p.taps = 2;
    double x0 = floor(x), y0 = floor(y);
    p.fx = x - x0;
    p.fy = y - y0;
    int64_t xi = border::clamp_far(x0), yi = border::clamp_far(y0);
    for (int k = 0; k < 2; ++k) {
        p.row[k] = border::index(a.bmode, yi + k, a.in_h);
        p.col[k] = border::index(a.bmode, xi + k, a.in_w);
    }
    return p;
}

__device__ __forceinline__ int64_t image_at(const RemapArgs& a, int64_t n, int64_t c, int64_t h,
                                            int64_t w) {
    const int64_t* s = a.image_strides;
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__device__ __forceinline__ int64_t mapped_at(const RemapArgs& a, int64_t n, int64_t c, int64_t h,
                                             int64_t w) {
    const int64_t* s = a.mapped_strides;
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__device__ __forceinline__ double tap_value(const RemapArgs& a, const void* src, int64_t n,
                                            int64_t c, const Point& p, int i, int j) {
    if (p.row[i] < 0 || p.col[j] < 0)
        return a.scalar;
    return load_float(src, a.dt, image_at(a, n, c, p.row[i], p.col[j]));
}

__global__ void forward_kernel(RemapArgs a, const void* src, const float* map_xy, void* dst,
                               int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, c = i / (a.out_w * a.out_h) % a.c;
        int64_t n = i / (a.out_w * a.out_h * a.c);
        Point p = point_of(a, map_xy, n, oh, ow);
        double v;
        if (!p.finite)
            v = a.bmode == WarpBorder::CONSTANT ? a.scalar : nan("");
        else {
            v = 0;
            for (int ti = 0; ti < p.taps; ++ti)
                for (int tj = 0; tj < p.taps; ++tj)
                    v = __dadd_rn(v,
                                  __dmul_rn(p.weight(ti, tj), tap_value(a, src, n, c, p, ti, tj)));
        }
        store_float(dst, a.dt, mapped_at(a, n, c, oh, ow), v);
    }
}

__global__ void scatter_kernel(RemapArgs a, const float* map_xy, const void* diff, double* acc,
                               int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, c = i / (a.out_w * a.out_h) % a.c;
        int64_t n = i / (a.out_w * a.out_h * a.c);
        Point p = point_of(a, map_xy, n, oh, ow);
        if (!p.finite)
            continue;
        double g = load_float(diff, a.dt, mapped_at(a, n, c, oh, ow));
        for (int ti = 0; ti < p.taps; ++ti)
            for (int tj = 0; tj < p.taps; ++tj) {
                if (p.row[ti] < 0 || p.col[tj] < 0)
                    continue;
                // acc is dense (n, C, in_h, in_w).
                int64_t k = ((n * a.c + c) * a.in_h + p.row[ti]) * a.in_w + p.col[tj];
                atomicAdd(acc + k, __dmul_rn(p.weight(ti, tj), g));
            }
    }
}

__global__ void round_image_kernel(RemapArgs a, const double* acc, void* grad, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t w = i % a.in_w, h = i / a.in_w % a.in_h, c = i / (a.in_w * a.in_h) % a.c;
        int64_t n = i / (a.in_w * a.in_h * a.c);
        store_float(grad, a.dt, image_at(a, n, c, h, w), acc[i]);
    }
}

__global__ void mat_kernel(RemapArgs a, const void* src, const float* map_xy, const void* diff,
                           float* grad, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, n = i / (a.out_w * a.out_h);
        Point p = point_of(a, map_xy, n, oh, ow);
        double gx = 0, gy = 0;
        if (p.finite && p.taps == 2)
            for (int64_t c = 0; c < a.c; ++c) {
                double g = load_float(diff, a.dt, mapped_at(a, n, c, oh, ow));
                double v00 = tap_value(a, src, n, c, p, 0, 0),
                       v01 = tap_value(a, src, n, c, p, 0, 1);
                double v10 = tap_value(a, src, n, c, p, 1, 0),
                       v11 = tap_value(a, src, n, c, p, 1, 1);
                gx += g * ((1 - p.fy) * (v01 - v00) + p.fy * (v11 - v10));
                gy += g * ((1 - p.fx) * (v10 - v00) + p.fx * (v11 - v01));
            }
        const int64_t* s = a.map_grad_strides;
        int64_t base = n * s[0] + oh * s[1] + ow * s[2];
        grad[base] = static_cast<float>(gx);
        grad[base + s[3]] = static_cast<float>(gy);
    }
}

}  // namespace

void remap_forward(const RemapArgs& a, const void* src, const float* map_xy, void* dst,
                   cudaStream_t stream) {
    int64_t total = a.n * a.c * a.out_h * a.out_w;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, map_xy, dst, total);
}

void remap_backward_data(const RemapArgs& a, const float* map_xy, const void* diff, double* acc,
                         void* grad, cudaStream_t stream) {
    int64_t in_total = a.n * a.c * a.in_h * a.in_w, out_total = a.n * a.c * a.out_h * a.out_w;
    if (in_total == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(in_total) * sizeof(double), stream));
    if (out_total)
        scatter_kernel<<<grid_for(out_total), kBlock, 0, stream>>>(a, map_xy, diff, acc, out_total);
    round_image_kernel<<<grid_for(in_total), kBlock, 0, stream>>>(a, acc, grad, in_total);
}

void remap_backward_mat(const RemapArgs& a, const void* src, const float* map_xy, const void* diff,
                        float* grad, cudaStream_t stream) {
    int64_t points = a.n * a.out_h * a.out_w;
    if (points)
        mat_kernel<<<grid_for(points), kBlock, 0, stream>>>(a, src, map_xy, diff, grad, points);
}

}  // namespace neomeg::dnn::cuda::kern
