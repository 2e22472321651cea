// DeformablePSROIPooling and its gradient over dense float32, as naive computes them
// (src/naive/deformable_psroi_pooling.cpp): a thread per pooled element places its bin's samples
// in float32 with src/common/psroi_geometry.h's arithmetic (repeated here for nvcc, which takes
// no NeoMeg header) and averages their bilinear values in double; the gradient adds each
// sample's share onto src and its slope onto trans with double atomics. The operator class
// checks the rois' batch column first.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"
#include "src/cuda/kernels/psroi_args.h"

namespace neomeg::dnn::cuda::kern {
namespace {

// One bin of one roi: its image, the roi's size, the first sample point and the steps.
struct Bin {
    int64_t image, part_y, part_x;
    float roi_w, roi_h, ys, xs, sub_h, sub_w;
};

__device__ int64_t part_of(int64_t b, int64_t pooled, uint32_t part_size) {
    return static_cast<int64_t>(floorf(static_cast<float>(b) / static_cast<float>(pooled) *
                                       static_cast<float>(part_size)));
}

__device__ Bin bin_of(const PsroiArgs& a, const float* rois, const float* trans, int64_t k,
                      int64_t ph, int64_t pw) {
    const float* r = rois + k * 5;
    const float s = a.spatial_scale;
    Bin b{};
    b.image = static_cast<int64_t>(r[0]);
    float x0 = __fsub_rn(__fmul_rn(roundf(r[1]), s), 0.5f);
    float y0 = __fsub_rn(__fmul_rn(roundf(r[2]), s), 0.5f);
    float xe = __fsub_rn(__fmul_rn(__fadd_rn(roundf(r[3]), 1.f), s), 0.5f);
    float ye = __fsub_rn(__fmul_rn(__fadd_rn(roundf(r[4]), 1.f), s), 0.5f);
    b.roi_w = fmaxf(__fsub_rn(xe, x0), 0.1f);
    b.roi_h = fmaxf(__fsub_rn(ye, y0), 0.1f);
    float bin_w = __fdiv_rn(b.roi_w, static_cast<float>(a.pw));
    float bin_h = __fdiv_rn(b.roi_h, static_cast<float>(a.ph));
    b.sub_w = __fdiv_rn(bin_w, static_cast<float>(a.sample_per_part));
    b.sub_h = __fdiv_rn(bin_h, static_cast<float>(a.sample_per_part));
    b.part_y = part_of(ph, a.ph, a.part_size);
    b.part_x = part_of(pw, a.pw, a.part_size);
    float ox = 0, oy = 0;
    if (!a.no_trans) {
        int64_t at = b.part_y * a.pw + b.part_x;
        ox = __fmul_rn(trans[(k * 2) * a.ph * a.pw + at], a.trans_std);
        oy = __fmul_rn(trans[(k * 2 + 1) * a.ph * a.pw + at], a.trans_std);
    }
    b.xs = __fadd_rn(__fadd_rn(__fmul_rn(static_cast<float>(pw), bin_w), x0),
                     __fmul_rn(ox, b.roi_w));
    b.ys = __fadd_rn(__fadd_rn(__fmul_rn(static_cast<float>(ph), bin_h), y0),
                     __fmul_rn(oy, b.roi_h));
    return b;
}

// Whether sample v along an axis of len pixels is taken, and its clamped coordinate.
__device__ bool take(float v, int64_t len, float& clamped) {
    if (v < -0.5f || static_cast<double>(v) > static_cast<double>(len) - 0.5)
        return false;
    clamped = fminf(fmaxf(v, 0.f), static_cast<float>(len - 1));
    return true;
}

// Calls f(y, x) for each taken sample of the bin.
template <class F>
__device__ void for_each_sample(const PsroiArgs& a, const Bin& b, F&& f) {
    for (uint32_t iy = 0; iy < a.sample_per_part; ++iy)
        for (uint32_t ix = 0; ix < a.sample_per_part; ++ix) {
            float y, x;
            if (take(__fadd_rn(b.xs, __fmul_rn(static_cast<float>(ix), b.sub_w)), a.w, x) &&
                take(__fadd_rn(b.ys, __fmul_rn(static_cast<float>(iy), b.sub_h)), a.h, y))
                f(y, x);
        }
}

__global__ void forward_kernel(PsroiArgs a, const float* src, const float* rois, const float* trans,
                               float* dst, float* count, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Bin b = bin_of(a, rois, trans, k, ph, pw);
        const float* plane = src + (b.image * a.c + c) * a.h * a.w;
        double sum = 0;
        int n = 0;
        for_each_sample(a, b, [&](float y, float x) {
            float fy = floorf(y), fx = floorf(x);
            int64_t y0 = static_cast<int64_t>(fy), y1 = static_cast<int64_t>(ceilf(y));
            int64_t x0 = static_cast<int64_t>(fx), x1 = static_cast<int64_t>(ceilf(x));
            double ay = y - fy, ax = x - fx;
            sum += (1 - ay) * (1 - ax) * plane[y0 * a.w + x0] +
                   ay * (1 - ax) * plane[y1 * a.w + x0] + (1 - ay) * ax * plane[y0 * a.w + x1] +
                   ay * ax * plane[y1 * a.w + x1];
            ++n;
        });
        dst[i] = n ? static_cast<float>(sum / n) : 0.f;
        count[i] = static_cast<float>(n);
    }
}

__global__ void backward_kernel(PsroiArgs a, const float* src, const float* rois,
                                const float* trans, const float* diff, const float* count,
                                double* acc_src, double* acc_trans, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        double cnt = count[i];
        if (!(cnt > 0))
            continue;
        double g = diff[i] / cnt;
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Bin b = bin_of(a, rois, trans, k, ph, pw);
        int64_t base = (b.image * a.c + c) * a.h * a.w;
        const float* plane = src + base;
        double* acc = acc_src + base;
        int64_t part = b.part_y * a.pw + b.part_x;
        for_each_sample(a, b, [&](float y, float x) {
            float fy = floorf(y), fx = floorf(x);
            int64_t y0 = static_cast<int64_t>(fy), y1 = static_cast<int64_t>(ceilf(y));
            int64_t x0 = static_cast<int64_t>(fx), x1 = static_cast<int64_t>(ceilf(x));
            double ay = y - fy, ax = x - fx;
            atomicAdd(acc + y0 * a.w + x0, (1 - ay) * (1 - ax) * g);
            atomicAdd(acc + y1 * a.w + x0, ay * (1 - ax) * g);
            atomicAdd(acc + y0 * a.w + x1, (1 - ay) * ax * g);
            atomicAdd(acc + y1 * a.w + x1, ay * ax * g);
            if (a.no_trans)
                return;
            double u00 = plane[y0 * a.w + x0], u01 = plane[y1 * a.w + x0];
            double u10 = plane[y0 * a.w + x1], u11 = plane[y1 * a.w + x1];
            double sx = (1 - ay) * (u10 - u00) + ay * (u11 - u01);
            double sy = (1 - ax) * (u01 - u00) + ax * (u11 - u10);
            atomicAdd(acc_trans + (k * 2) * a.ph * a.pw + part, sx * a.trans_std * g * b.roi_w);
            atomicAdd(acc_trans + (k * 2 + 1) * a.ph * a.pw + part, sy * a.trans_std * g * b.roi_h);
        });
    }
}

__global__ void round_kernel(const double* acc, float* out, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        out[i] = static_cast<float>(acc[i]);
}

}  // namespace

void psroi_forward(const PsroiArgs& a, const float* src, const float* rois, const float* trans,
                   float* dst, float* count, cudaStream_t stream) {
    int64_t total = a.k * a.c * a.ph * a.pw;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, rois, trans, dst, count,
                                                               total);
}

void psroi_backward(const PsroiArgs& a, const float* src, const float* rois, const float* trans,
                    const float* diff, const float* count, double* acc, float* src_grad,
                    float* trans_grad, cudaStream_t stream) {
    int64_t n_src = a.batch * a.c * a.h * a.w;
    int64_t n_trans = a.trans_elems;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, sizeof(double) * (n_src + n_trans), stream));
    int64_t total = a.k * a.c * a.ph * a.pw;
    if (total)
        backward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, rois, trans, diff, count,
                                                                acc, acc + n_src, total);
    if (n_src)
        round_kernel<<<grid_for(n_src), kBlock, 0, stream>>>(acc, src_grad, n_src);
    if (n_trans)
        round_kernel<<<grid_for(n_trans), kBlock, 0, stream>>>(acc + n_src, trans_grad, n_trans);
}

}  // namespace neomeg::dnn::cuda::kern
