// ROIAlign, ROIPooling and their gradients over NCHW, as naive computes them
// (src/naive/roi_align.cpp, roi_pooling.cpp): a thread per pooled element sampling or scanning
// its bin in double (forward), a thread per diff element adding onto the image with double
// atomics into a dense accumulator rounded into grad afterwards (backward), and the rois' batch
// column checked first (roi_find_bad_batch) by the operator classes.
#include "src/common/border.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ double roi_value(const RoiArgs& a, const void* rois, int64_t k, int j) {
    return load_float(rois, a.rois_dt, k * a.rois_strides[0] + j * a.rois_strides[1]);
}

// src/common/roi.h's batch_index.
__device__ __forceinline__ int64_t batch_index(double v, int64_t batch) {
    return v > -1.0 && v < static_cast<double>(batch) ? static_cast<int64_t>(v) : -1;
}

__device__ __forceinline__ int64_t image_at(const RoiArgs& a, int64_t b, int64_t c, int64_t h,
                                            int64_t w) {
    const int64_t* s = a.image_strides;
    return b * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__device__ __forceinline__ int64_t pooled_at(const int64_t* s, int64_t k, int64_t c, int64_t h,
                                             int64_t w) {
    return k * s[0] + c * s[1] + h * s[2] + w * s[3];
}

// ---------------------------------------------------------------------------------- ROIAlign

// naive's Grid: one roi's bins in src pixels.
struct Grid {
    int64_t image;
    double y0, x0, bin_h, bin_w;
    uint32_t sh, sw;

    __device__ double y(int64_t ph, uint32_t iy) const {
        return y0 + bin_h * (ph + (iy + 0.5) / sh);
    }
    __device__ double x(int64_t pw, uint32_t ix) const {
        return x0 + bin_w * (pw + (ix + 0.5) / sw);
    }
};

__device__ Grid grid_of(const RoiArgs& a, const void* rois, int64_t k) {
    Grid g{};
    g.image = batch_index(roi_value(a, rois, k, 0), a.batch);
    double s = a.spatial_scale, off = a.offset;
    g.x0 = roi_value(a, rois, k, 1) * s - off;
    g.y0 = roi_value(a, rois, k, 2) * s - off;
    double w = fmax(roi_value(a, rois, k, 3) * s - off - g.x0, 0.0);
    double h = fmax(roi_value(a, rois, k, 4) * s - off - g.y0, 0.0);
    g.bin_h = h / a.ph;
    g.bin_w = w / a.pw;
    g.sh = a.sample_h ? a.sample_h : static_cast<uint32_t>(fmax(1.0, ceil(g.bin_h)));
    g.sw = a.sample_w ? a.sample_w : static_cast<uint32_t>(fmax(1.0, ceil(g.bin_w)));
    return g;
}

// The bilinear sample at (y, x), a pixel outside the image reading 0; with `acc`, adds
// weight * g onto the in-image taps instead.
__device__ double align_sample(const RoiArgs& a, const void* src, int64_t b, int64_t c, double y,
                               double x, double* acc = nullptr, double g = 0) {
    double fy = floor(y), fx = floor(x);
    int64_t r0 = border::clamp_far(fy), q0 = border::clamp_far(fx);
    double ay = y - fy, ax = x - fx, v = 0;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            int64_t r = r0 + i, q = q0 + j;
            if (r < 0 || r >= a.in_h || q < 0 || q >= a.in_w)
                continue;
            double w = (i ? ay : 1 - ay) * (j ? ax : 1 - ax);
            if (acc)
                atomicAdd(acc + ((b * a.c + c) * a.in_h + r) * a.in_w + q, w * g);
            else
                v += w * load_float(src, a.dt, image_at(a, b, c, r, q));
        }
    return v;
}

__global__ void align_forward_kernel(RoiArgs a, const void* src, const void* rois, void* dst,
                                     int32_t* index, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Grid g = grid_of(a, rois, k);
        double best = 0, sum = 0;
        int64_t arg = -1;
        for (uint32_t iy = 0; iy < g.sh; ++iy)
            for (uint32_t ix = 0; ix < g.sw; ++ix) {
                double v = align_sample(a, src, g.image, c, g.y(ph, iy), g.x(pw, ix));
                sum += v;
                if (arg < 0 || v > best) {
                    best = v;
                    arg = static_cast<int64_t>(iy) * g.sw + ix;
                }
            }
        bool max = a.mode == RoiMode::MAX;
        double out = max ? best : sum / (static_cast<double>(g.sh) * g.sw);
        store_float(dst, a.dt, pooled_at(a.pooled_strides, k, c, ph, pw), out);
        index[pooled_at(a.index_strides, k, c, ph, pw)] = static_cast<int32_t>(max ? arg : -1);
    }
}

__global__ void align_backward_kernel(RoiArgs a, const void* diff, const void* rois,
                                      const int32_t* index, double* acc, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Grid g = grid_of(a, rois, k);
        double d = load_float(diff, a.dt, pooled_at(a.pooled_strides, k, c, ph, pw));
        if (a.mode == RoiMode::MAX) {
            int64_t s = index[pooled_at(a.index_strides, k, c, ph, pw)];
            if (s < 0 || s >= static_cast<int64_t>(g.sh) * g.sw)
                continue;
            auto iy = static_cast<uint32_t>(s / g.sw), ix = static_cast<uint32_t>(s % g.sw);
            align_sample(a, nullptr, g.image, c, g.y(ph, iy), g.x(pw, ix), acc, d);
            continue;
        }
        double share = d / (static_cast<double>(g.sh) * g.sw);
        for (uint32_t iy = 0; iy < g.sh; ++iy)
            for (uint32_t ix = 0; ix < g.sw; ++ix)
                align_sample(a, nullptr, g.image, c, g.y(ph, iy), g.x(pw, ix), acc, share);
    }
}

// -------------------------------------------------------------------------------- ROIPooling

// naive's Box and Bin: MegDNN's integer bins, in float32 arithmetic without contraction.
struct Box {
    int64_t image, h0, w0;
    float bin_h, bin_w;
};

__device__ Box box_of(const RoiArgs& a, const void* rois, int64_t k) {
    Box b{};
    b.image = batch_index(roi_value(a, rois, k, 0), a.batch);
    auto corner = [&](int j) {
        auto v = static_cast<float>(roi_value(a, rois, k, j));
        return border::clamp_far(roundf(__fmul_rn(v, a.scale)));
    };
    b.w0 = corner(1);
    b.h0 = corner(2);
    int64_t w = corner(3) - b.w0 + 1, h = corner(4) - b.h0 + 1;
    w = w > 1 ? w : 1;
    h = h > 1 ? h : 1;
    b.bin_h = __fdiv_rn(static_cast<float>(h), static_cast<float>(a.ph));
    b.bin_w = __fdiv_rn(static_cast<float>(w), static_cast<float>(a.pw));
    return b;
}

struct Bin {
    int64_t hs, he, ws, we;
};

__device__ __forceinline__ int64_t clip(int64_t v, int64_t len) {
    return v < 0 ? 0 : v > len ? len : v;
}

__device__ Bin bin_of(const RoiArgs& a, const Box& b, int64_t ph, int64_t pw) {
    Bin r;
    r.hs = clip(border::clamp_far(floorf(__fmul_rn(static_cast<float>(ph), b.bin_h))) + b.h0,
                a.in_h);
    r.he = clip(border::clamp_far(ceilf(__fmul_rn(static_cast<float>(ph + 1), b.bin_h))) + b.h0,
                a.in_h);
    r.ws = clip(border::clamp_far(floorf(__fmul_rn(static_cast<float>(pw), b.bin_w))) + b.w0,
                a.in_w);
    r.we = clip(border::clamp_far(ceilf(__fmul_rn(static_cast<float>(pw + 1), b.bin_w))) + b.w0,
                a.in_w);
    r.he = r.he > r.hs ? r.he : r.hs;
    r.we = r.we > r.ws ? r.we : r.ws;
    return r;
}

__global__ void pool_forward_kernel(RoiArgs a, const void* src, const void* rois, void* dst,
                                    int32_t* index, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Box b = box_of(a, rois, k);
        Bin bin = bin_of(a, b, ph, pw);
        double best = 0, sum = 0;
        int64_t arg = -1;
        for (int64_t y = bin.hs; y < bin.he; ++y)
            for (int64_t x = bin.ws; x < bin.we; ++x) {
                double v = load_float(src, a.dt, image_at(a, b.image, c, y, x));
                sum += v;
                if (arg < 0 || v > best) {
                    best = v;
                    arg = y * a.in_w + x;
                }
            }
        int64_t count = (bin.he - bin.hs) * (bin.we - bin.ws);
        bool max = a.mode == RoiMode::MAX;
        double out = count == 0 ? 0 : max ? best : sum / static_cast<double>(count);
        store_float(dst, a.dt, pooled_at(a.pooled_strides, k, c, ph, pw), out);
        index[pooled_at(a.index_strides, k, c, ph, pw)] = static_cast<int32_t>(max ? arg : -1);
    }
}

__global__ void pool_backward_kernel(RoiArgs a, const void* diff, const void* rois,
                                     const int32_t* index, double* acc, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t pw = i % a.pw, ph = i / a.pw % a.ph, c = i / (a.pw * a.ph) % a.c;
        int64_t k = i / (a.pw * a.ph * a.c);
        Box b = box_of(a, rois, k);
        Bin bin = bin_of(a, b, ph, pw);
        double d = load_float(diff, a.dt, pooled_at(a.pooled_strides, k, c, ph, pw));
        double* plane = acc + (b.image * a.c + c) * a.in_h * a.in_w;
        if (a.mode == RoiMode::MAX) {
            int64_t s = index[pooled_at(a.index_strides, k, c, ph, pw)];
            int64_t y = a.in_w ? s / a.in_w : 0, x = a.in_w ? s % a.in_w : 0;
            if (s >= 0 && y >= bin.hs && y < bin.he && x >= bin.ws && x < bin.we)
                atomicAdd(plane + s, d);
            continue;
        }
        int64_t count = (bin.he - bin.hs) * (bin.we - bin.ws);
        for (int64_t y = bin.hs; y < bin.he; ++y)
            for (int64_t x = bin.ws; x < bin.we; ++x)
                atomicAdd(plane + y * a.in_w + x, d / static_cast<double>(count));
    }
}

// --------------------------------------------------------------------------------- shared

__global__ void find_bad_batch_kernel(RoiArgs a, const void* rois, unsigned long long* first) {
    for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < a.k;
         k += static_cast<int64_t>(gridDim.x) * blockDim.x)
        if (batch_index(roi_value(a, rois, k, 0), a.batch) < 0)
            atomicMin(first, static_cast<unsigned long long>(k));
}

__global__ void bad_value_kernel(RoiArgs a, const void* rois, const unsigned long long* first,
                                 double* value) {
    if (*first != ~0ull)
        *value = roi_value(a, rois, static_cast<int64_t>(*first), 0);
}

__global__ void round_image_kernel(RoiArgs a, const double* acc, void* grad, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t w = i % a.in_w, h = i / a.in_w % a.in_h, c = i / (a.in_w * a.in_h) % a.c;
        int64_t b = i / (a.in_w * a.in_h * a.c);
        store_float(grad, a.dt, image_at(a, b, c, h, w), acc[i]);
    }
}

using ScatterKernel = void (*)(RoiArgs, const void*, const void*, const int32_t*, double*, int64_t);

void backward(ScatterKernel scatter, const RoiArgs& a, const void* diff, const void* rois,
              const int32_t* index, double* acc, void* grad, cudaStream_t stream) {
    int64_t in_total = a.batch * a.c * a.in_h * a.in_w, out_total = a.k * a.c * a.ph * a.pw;
    if (in_total == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(in_total) * sizeof(double), stream));
    if (out_total)
        scatter<<<grid_for(out_total), kBlock, 0, stream>>>(a, diff, rois, index, acc, out_total);
    round_image_kernel<<<grid_for(in_total), kBlock, 0, stream>>>(a, acc, grad, in_total);
}

}  // namespace

void roi_find_bad_batch(const RoiArgs& a, const void* rois, unsigned long long* first,
                        double* value, cudaStream_t stream) {
    NM_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), stream));
    if (a.k)
        find_bad_batch_kernel<<<grid_for(a.k), kBlock, 0, stream>>>(a, rois, first);
    bad_value_kernel<<<1, 1, 0, stream>>>(a, rois, first, value);
}

void roi_align_forward(const RoiArgs& a, const void* src, const void* rois, void* dst,
                       int32_t* index, cudaStream_t stream) {
    int64_t total = a.k * a.c * a.ph * a.pw;
    if (total)
        align_forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, rois, dst, index,
                                                                     total);
}

void roi_align_backward(const RoiArgs& a, const void* diff, const void* rois, const int32_t* index,
                        double* acc, void* grad, cudaStream_t stream) {
    backward(align_backward_kernel, a, diff, rois, index, acc, grad, stream);
}

void roi_pooling_forward(const RoiArgs& a, const void* src, const void* rois, void* dst,
                         int32_t* index, cudaStream_t stream) {
    int64_t total = a.k * a.c * a.ph * a.pw;
    if (total)
        pool_forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, rois, dst, index,
                                                                    total);
}

void roi_pooling_backward(const RoiArgs& a, const void* diff, const void* rois,
                          const int32_t* index, double* acc, void* grad, cudaStream_t stream) {
    backward(pool_backward_kernel, a, diff, rois, index, acc, grad, stream);
}

}  // namespace neomeg::dnn::cuda::kern
