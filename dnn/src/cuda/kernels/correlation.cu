// Correlation and its gradients over dense NCHW float32, as naive computes them
// (src/naive/correlation.cpp): a thread per output element summing its terms in double; a thread
// per gradient element gathering, for each displacement, the diff of the outputs whose window
// covers its pixel (the x86 kernel's gather, src/x86/correlation.cpp), in double.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/correlation_args.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ double pixel(const CorrelationArgs& a, const float* t, int64_t n,
                                        int64_t c, int64_t y, int64_t x) {
    if (y < 0 || y >= a.h || x < 0 || x >= a.w)
        return 0.0;
    return t[((n * a.c + c) * a.h + y) * a.w + x];
}

__device__ __forceinline__ int64_t floor_div(int64_t p, int64_t q) {
    return p >= 0 ? p / q : -((-p + q - 1) / q);
}

__global__ void forward_kernel(CorrelationArgs a, const float* d1, const float* d2, float* dst,
                               int64_t total) {
    const int64_t side = a.grid_side;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t x = i % a.out_w, y = i / a.out_w % a.out_h;
        int64_t d = i / (a.out_w * a.out_h) % (side * side),
                n = i / (a.out_w * a.out_h * side * side);
        int64_t dy = (d / side - a.grid_radius) * a.stride2,
                dx = (d % side - a.grid_radius) * a.stride2;
        int64_t y1 = y * a.stride1 + a.origin, x1 = x * a.stride1 + a.origin;
        double s = 0;
        for (int64_t j = -a.radius; j <= a.radius; ++j)
            for (int64_t k = -a.radius; k <= a.radius; ++k)
                for (int64_t c = 0; c < a.c; ++c) {
                    double va = pixel(a, d1, n, c, y1 + j, x1 + k);
                    double vb = pixel(a, d2, n, c, y1 + j + dy, x1 + k + dx);
                    s += a.multiply ? va * vb : fabs(va - vb);
                }
        dst[i] = static_cast<float>(s / a.norm);
    }
}

__global__ void backward_kernel(CorrelationArgs a, int which, const float* diff, const float* d1,
                                const float* d2, float* grad, int64_t total) {
    const int64_t side = a.grid_side, chans = side * side;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t x = i % a.w, y = i / a.w % a.h, c = i / (a.w * a.h) % a.c,
                n = i / (a.w * a.h * a.c);
        double s = 0;
        for (int64_t d = 0; d < chans; ++d) {
            int64_t dy = (d / side - a.grid_radius) * a.stride2;
            int64_t dx = (d % side - a.grid_radius) * a.stride2;
            int64_t y1 = which == 1 ? y : y - dy, x1 = which == 1 ? x : x - dx;
            // The outputs o whose window centre o * stride1 + origin lies within radius of y1.
            int64_t ya = -floor_div(-(y1 - a.radius - a.origin), a.stride1);
            int64_t yb = floor_div(y1 + a.radius - a.origin, a.stride1);
            int64_t xa = -floor_div(-(x1 - a.radius - a.origin), a.stride1);
            int64_t xb = floor_div(x1 + a.radius - a.origin, a.stride1);
            ya = ya < 0 ? 0 : ya;
            xa = xa < 0 ? 0 : xa;
            yb = yb > a.out_h - 1 ? a.out_h - 1 : yb;
            xb = xb > a.out_w - 1 ? a.out_w - 1 : xb;
            if (ya > yb || xa > xb)
                continue;
            double box = 0;
            const float* plane = diff + (n * chans + d) * a.out_h * a.out_w;
            for (int64_t oy = ya; oy <= yb; ++oy)
                for (int64_t ox = xa; ox <= xb; ++ox)
                    box += plane[oy * a.out_w + ox];
            double va = pixel(a, d1, n, c, y1, x1), vb = pixel(a, d2, n, c, y1 + dy, x1 + dx);
            double slope;
            if (a.multiply)
                slope = which == 1 ? vb : va;
            else if (which == 1)
                slope = va > vb ? 1.0 : -1.0;
            else
                slope = va >= vb ? -1.0 : 1.0;
            s += box * slope;
        }
        grad[i] = static_cast<float>(s / a.norm);
    }
}

}  // namespace

void correlation_forward(const CorrelationArgs& a, const float* data1, const float* data2,
                         float* dst, cudaStream_t stream) {
    int64_t total = a.n * a.grid_side * a.grid_side * a.out_h * a.out_w;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, data1, data2, dst, total);
}

void correlation_backward(const CorrelationArgs& a, int which, const float* diff,
                          const float* data1, const float* data2, float* grad,
                          cudaStream_t stream) {
    int64_t total = a.n * a.c * a.h * a.w;
    if (total)
        backward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, which, diff, data1, data2, grad,
                                                                total);
}

}  // namespace neomeg::dnn::cuda::kern
