// DeformableConvForward and its gradients over NCHW, in double as naive computes: a thread per
// output element (forward) or filter element (BackwardFilter) summing its samples, and a thread
// per sample (n, ic, tap, oh, ow) adding its src, offset and mask contributions with double
// atomics into dense accumulators rounded into the gradients afterwards (BackwardData).
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ int64_t at(const int64_t* st, int64_t a, int64_t b, int64_t c,
                                      int64_t d) {
    return a * st[0] + b * st[1] + c * st[2] + d * st[3];
}

// One sample point under MegEngine's rule (naive's locate): outside (-1, H) x (-1, W) it reads 0;
// inside, its four taps floor + {0, 1}, those off the plane reading 0.
struct Point {
    bool inside;
    int64_t h0, w0;
    double lh, lw;
    double v[2][2];  // the taps
};

// The point tap k of output (oh, ow) reads for channel ic of image n, and its mask index pieces.
__device__ Point sample(const DeformArgs& a, const void* src, const void* offset, int64_t n,
                        int64_t ic, int64_t k, int64_t oh, int64_t ow) {
    int64_t taps = a.fh * a.fw, d = ic / (a.ic / a.dg);
    int64_t ch = 2 * (d * taps + k);
    double h = static_cast<double>(oh * a.sh - a.ph + (k / a.fw) * a.dh) +
               load_float(offset, a.dt, at(a.offset_strides, n, ch, oh, ow));
    double w = static_cast<double>(ow * a.sw - a.pw + (k % a.fw) * a.dw) +
               load_float(offset, a.dt, at(a.offset_strides, n, ch + 1, oh, ow));
    Point p{};
    p.inside = h > -1 && w > -1 && h < static_cast<double>(a.ih) && w < static_cast<double>(a.iw);
    if (!p.inside)
        return p;
    double fh = floor(h), fw = floor(w);
    p.h0 = static_cast<int64_t>(fh);
    p.w0 = static_cast<int64_t>(fw);
    p.lh = h - fh;
    p.lw = w - fw;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            int64_t r = p.h0 + i, c = p.w0 + j;
            p.v[i][j] = r >= 0 && r < a.ih && c >= 0 && c < a.iw
                                ? load_float(src, a.dt, at(a.src_strides, n, ic, r, c))
                                : 0.0;
        }
    return p;
}

__device__ __forceinline__ double value(const Point& p) {
    if (!p.inside)
        return 0;
    return (1 - p.lh) * ((1 - p.lw) * p.v[0][0] + p.lw * p.v[0][1]) +
           p.lh * ((1 - p.lw) * p.v[1][0] + p.lw * p.v[1][1]);
}

__device__ __forceinline__ double mask_of(const DeformArgs& a, const void* mask, int64_t n,
                                          int64_t ic, int64_t k, int64_t oh, int64_t ow) {
    int64_t d = ic / (a.ic / a.dg);
    return load_float(mask, a.dt, at(a.mask_strides, n, d * a.fh * a.fw + k, oh, ow));
}

__global__ void forward_kernel(DeformArgs a, const void* src, const void* filter,
                               const void* offset, const void* mask, void* dst, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group, taps = a.fh * a.fw;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.ow, oh = i / a.ow % a.oh, oc = i / (a.ow * a.oh) % a.oc;
        int64_t n = i / (a.ow * a.oh * a.oc);
        double acc = 0;
        for (int64_t c = 0; c < icg; ++c) {
            int64_t ic = oc / ocg * icg + c;
            for (int64_t k = 0; k < taps; ++k) {
                double f =
                        load_float(filter, a.dt, at(a.filter_strides, oc, c, k / a.fw, k % a.fw));
                acc += f * mask_of(a, mask, n, ic, k, oh, ow) *
                       value(sample(a, src, offset, n, ic, k, oh, ow));
            }
        }
        store_float(dst, a.dt, at(a.out_strides, n, oc, oh, ow), acc);
    }
}

__global__ void filter_kernel(DeformArgs a, const void* src, const void* offset, const void* mask,
                              const void* diff, void* grad, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group, taps = a.fh * a.fw;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t k = i % taps, c = i / taps % icg, oc = i / (taps * icg);
        int64_t ic = oc / ocg * icg + c;
        double acc = 0;
        for (int64_t n = 0; n < a.n; ++n)
            for (int64_t oh = 0; oh < a.oh; ++oh)
                for (int64_t ow = 0; ow < a.ow; ++ow)
                    acc += load_float(diff, a.dt, at(a.out_strides, n, oc, oh, ow)) *
                           mask_of(a, mask, n, ic, k, oh, ow) *
                           value(sample(a, src, offset, n, ic, k, oh, ow));
        store_float(grad, a.dt, at(a.grad_strides[0], oc, c, k / a.fw, k % a.fw), acc);
    }
}

// acc_src (n, ic, ih, iw), acc_offset and acc_mask are dense, in their tensors' shapes.
__global__ void data_kernel(DeformArgs a, const void* src, const void* filter, const void* offset,
                            const void* mask, const void* diff, double* acc_src, double* acc_offset,
                            double* acc_mask, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group, taps = a.fh * a.fw;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.ow, oh = i / a.ow % a.oh, k = i / (a.ow * a.oh) % taps;
        int64_t ic = i / (a.ow * a.oh * taps) % a.ic, n = i / (a.ow * a.oh * taps * a.ic);
        Point p = sample(a, src, offset, n, ic, k, oh, ow);
        if (!p.inside)
            continue;
        double cg = 0;  // d loss / d (masked sample)
        for (int64_t o = 0; o < ocg; ++o) {
            int64_t oc = ic / icg * ocg + o;
            double f = load_float(filter, a.dt,
                                  at(a.filter_strides, oc, ic % icg, k / a.fw, k % a.fw));
            cg += f * load_float(diff, a.dt, at(a.out_strides, n, oc, oh, ow));
        }
        double m = mask_of(a, mask, n, ic, k, oh, ow);
        int64_t d = ic / (a.ic / a.dg);
        int64_t plane = a.oh * a.ow, pos = oh * a.ow + ow;
        atomicAdd(acc_mask + (n * a.dg * taps + d * taps + k) * plane + pos, cg * value(p));
        int64_t off_h = (n * 2 * a.dg * taps + 2 * (d * taps + k)) * plane + pos;
        atomicAdd(acc_offset + off_h,
                  cg * m * ((1 - p.lw) * (p.v[1][0] - p.v[0][0]) + p.lw * (p.v[1][1] - p.v[0][1])));
        atomicAdd(acc_offset + off_h + plane,
                  cg * m * ((1 - p.lh) * (p.v[0][1] - p.v[0][0]) + p.lh * (p.v[1][1] - p.v[1][0])));
        for (int ti = 0; ti < 2; ++ti)
            for (int tj = 0; tj < 2; ++tj) {
                int64_t r = p.h0 + ti, c = p.w0 + tj;
                if (r >= 0 && r < a.ih && c >= 0 && c < a.iw)
                    atomicAdd(acc_src + ((n * a.ic + ic) * a.ih + r) * a.iw + c,
                              cg * m * (ti ? p.lh : 1 - p.lh) * (tj ? p.lw : 1 - p.lw));
            }
    }
}

struct Dims4 {
    int64_t shape[4], strides[4];
};

__global__ void round_kernel(const double* acc, void* out, DT dt, Dims4 d, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t x = i % d.shape[3], y = i / d.shape[3] % d.shape[2];
        int64_t c = i / (d.shape[3] * d.shape[2]) % d.shape[1];
        int64_t n = i / (d.shape[3] * d.shape[2] * d.shape[1]);
        store_float(out, dt, at(d.strides, n, c, y, x), acc[i]);
    }
}

void round_into(const double* acc, void* out, DT dt, const int64_t (&shape)[4],
                const int64_t (&strides)[4], cudaStream_t stream) {
    Dims4 d{};
    int64_t total = 1;
    for (int k = 0; k < 4; ++k) {
        d.shape[k] = shape[k];
        d.strides[k] = strides[k];
        total *= shape[k];
    }
    if (total)
        round_kernel<<<grid_for(total), kBlock, 0, stream>>>(acc, out, dt, d, total);
}

}  // namespace

void deformable_conv_forward(const DeformArgs& a, const void* src, const void* filter,
                             const void* offset, const void* mask, void* dst, cudaStream_t stream) {
    int64_t total = a.n * a.oc * a.oh * a.ow;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, filter, offset, mask, dst,
                                                               total);
}

void deformable_conv_backward_filter(const DeformArgs& a, const void* src, const void* offset,
                                     const void* mask, const void* diff, void* grad,
                                     cudaStream_t stream) {
    int64_t total = a.oc * (a.ic / a.group) * a.fh * a.fw;
    if (total)
        filter_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, offset, mask, diff, grad,
                                                              total);
}

void deformable_conv_backward_data(const DeformArgs& a, const void* src, const void* filter,
                                   const void* offset, const void* mask, const void* diff,
                                   double* acc, void* src_grad, void* offset_grad, void* mask_grad,
                                   cudaStream_t stream) {
    int64_t taps = a.fh * a.fw;
    int64_t src_n = a.n * a.ic * a.ih * a.iw, offset_n = a.n * 2 * a.dg * taps * a.oh * a.ow,
            mask_n = a.n * a.dg * taps * a.oh * a.ow;
    size_t bytes = static_cast<size_t>(src_n + offset_n + mask_n) * sizeof(double);
    if (bytes == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, bytes, stream));
    double *acc_offset = acc + src_n, *acc_mask = acc_offset + offset_n;
    int64_t samples = a.n * a.ic * taps * a.oh * a.ow;
    if (samples)
        data_kernel<<<grid_for(samples), kBlock, 0, stream>>>(a, src, filter, offset, mask, diff,
                                                              acc, acc_offset, acc_mask, samples);
    round_into(acc, src_grad, a.dt, {a.n, a.ic, a.ih, a.iw}, a.grad_strides[0], stream);
    round_into(acc_offset, offset_grad, a.dt, {a.n, 2 * a.dg * taps, a.oh, a.ow}, a.grad_strides[1],
               stream);
    round_into(acc_mask, mask_grad, a.dt, {a.n, a.dg * taps, a.oh, a.ow}, a.grad_strides[2],
               stream);
}

}  // namespace neomeg::dnn::cuda::kern
