// WarpPerspective and its gradients over NCHW, in double as naive computes: a thread per output
// pixel and channel summing its four taps (forward), a thread per diff element adding onto its
// taps with double atomics into a dense accumulator rounded into grad afterwards (BackwardData),
// and a thread per output pixel summing its channels' slopes and adding its nine mat
// contributions with double atomics (BackwardMat).
#include "src/common/border.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

struct Sample {
    bool finite;
    double x, y, d, fx, fy;
    int64_t row[2], col[2];
    int64_t image;  // the src batch index, mat_idx[n]
};

// naive's sample_of: the projection in double, coordinates clamped to +-2^40 before the int64
// conversion (every tap there is outside any image).
__device__ Sample sample_of(const WarpArgs& a, const float* mat, const int32_t* mat_idx, int64_t n,
                            int64_t oh, int64_t ow) {
    Sample s{};
    double m[9];
    for (int k = 0; k < 9; ++k)
        m[k] = mat[n * a.mat_strides[0] + (k / 3) * a.mat_strides[1] + (k % 3) * a.mat_strides[2]];
    s.image = mat_idx[n * a.idx_stride];
    auto h = static_cast<double>(oh), w = static_cast<double>(ow);
    s.d = __dadd_rn(__dadd_rn(__dmul_rn(m[6], w), __dmul_rn(m[7], h)), m[8]);
    s.x = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(m[0], w), __dmul_rn(m[1], h)), m[2]), s.d);
    s.y = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(m[3], w), __dmul_rn(m[4], h)), m[5]), s.d);
    s.finite = isfinite(s.x) && isfinite(s.y);
    if (!s.finite)
        return s;
    double x0 = floor(s.x), y0 = floor(s.y);
    s.fx = s.x - x0;
    s.fy = s.y - y0;
    int64_t xi = border::clamp_far(x0), yi = border::clamp_far(y0);
    for (int k = 0; k < 2; ++k) {
        s.row[k] = border::index(a.bmode, yi + k, a.in_h);
        s.col[k] = border::index(a.bmode, xi + k, a.in_w);
    }
    return s;
}

__device__ __forceinline__ double tap_weight(const Sample& s, int i, int j) {
    return __dmul_rn(i ? s.fy : 1 - s.fy, j ? s.fx : 1 - s.fx);
}

__device__ __forceinline__ int64_t image_at(const WarpArgs& a, int64_t b, int64_t c, int64_t h,
                                            int64_t w) {
    const int64_t* s = a.image_strides;
    return b * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__device__ __forceinline__ double tap_value(const WarpArgs& a, const void* src, int64_t c,
                                            const Sample& s, int i, int j) {
    if (s.row[i] < 0 || s.col[j] < 0)
        return a.border_val;
    return load_float(src, a.dt, image_at(a, s.image, c, s.row[i], s.col[j]));
}

__device__ __forceinline__ int64_t warped_at(const WarpArgs& a, int64_t n, int64_t c, int64_t h,
                                             int64_t w) {
    const int64_t* s = a.warped_strides;
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
}

__global__ void forward_kernel(WarpArgs a, const void* src, const float* mat,
                               const int32_t* mat_idx, void* dst, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, c = i / (a.out_w * a.out_h) % a.c;
        int64_t n = i / (a.out_w * a.out_h * a.c);
        Sample s = sample_of(a, mat, mat_idx, n, oh, ow);
        double v;
        if (!s.finite)
            v = a.bmode == WarpBorder::CONSTANT ? a.border_val : nan("");
        else {
            v = 0;
            for (int ti = 0; ti < 2; ++ti)
                for (int tj = 0; tj < 2; ++tj)
                    v = __dadd_rn(
                            v, __dmul_rn(tap_weight(s, ti, tj), tap_value(a, src, c, s, ti, tj)));
        }
        store_float(dst, a.dt, warped_at(a, n, c, oh, ow), v);
    }
}

__global__ void scatter_kernel(WarpArgs a, const float* mat, const int32_t* mat_idx,
                               const void* diff, double* acc, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, c = i / (a.out_w * a.out_h) % a.c;
        int64_t n = i / (a.out_w * a.out_h * a.c);
        Sample s = sample_of(a, mat, mat_idx, n, oh, ow);
        if (!s.finite)
            continue;
        double g = load_float(diff, a.dt, warped_at(a, n, c, oh, ow));
        for (int ti = 0; ti < 2; ++ti)
            for (int tj = 0; tj < 2; ++tj) {
                if (s.row[ti] < 0 || s.col[tj] < 0)
                    continue;
                // acc is dense (src_n, C, in_h, in_w).
                int64_t k = ((s.image * a.c + c) * a.in_h + s.row[ti]) * a.in_w + s.col[tj];
                atomicAdd(acc + k, __dmul_rn(tap_weight(s, ti, tj), g));
            }
    }
}

__global__ void round_image_kernel(WarpArgs a, const double* acc, void* grad, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t w = i % a.in_w, h = i / a.in_w % a.in_h, c = i / (a.in_w * a.in_h) % a.c;
        int64_t b = i / (a.in_w * a.in_h * a.c);
        store_float(grad, a.dt, image_at(a, b, c, h, w), acc[i]);
    }
}

__global__ void mat_kernel(WarpArgs a, const void* src, const float* mat, const int32_t* mat_idx,
                           const void* diff, double* acc, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.out_w, oh = i / a.out_w % a.out_h, n = i / (a.out_w * a.out_h);
        Sample s = sample_of(a, mat, mat_idx, n, oh, ow);
        if (!s.finite)
            continue;
        double gx = 0, gy = 0;
        for (int64_t c = 0; c < a.c; ++c) {
            double g = load_float(diff, a.dt, warped_at(a, n, c, oh, ow));
            double v00 = tap_value(a, src, c, s, 0, 0), v01 = tap_value(a, src, c, s, 0, 1);
            double v10 = tap_value(a, src, c, s, 1, 0), v11 = tap_value(a, src, c, s, 1, 1);
            gx += g * ((1 - s.fy) * (v01 - v00) + s.fy * (v11 - v10));
            gy += g * ((1 - s.fx) * (v10 - v00) + s.fx * (v11 - v01));
        }
        auto h = static_cast<double>(oh), w = static_cast<double>(ow);
        double proj = -(gx * s.x + gy * s.y);
        double row[3] = {w / s.d, h / s.d, 1 / s.d};
        for (int k = 0; k < 3; ++k) {
            atomicAdd(acc + n * 9 + k, gx * row[k]);
            atomicAdd(acc + n * 9 + 3 + k, gy * row[k]);
            atomicAdd(acc + n * 9 + 6 + k, proj * row[k]);
        }
    }
}

struct MatStrides {
    int64_t s[3];
};

__global__ void round_mat_kernel(const double* acc, float* grad, MatStrides st, int64_t total) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t n = i / 9, r = i % 9 / 3, c = i % 3;
        grad[n * st.s[0] + r * st.s[1] + c * st.s[2]] = static_cast<float>(acc[i]);
    }
}

}  // namespace

void warp_perspective_forward(const WarpArgs& a, const void* src, const float* mat,
                              const int32_t* mat_idx, void* dst, cudaStream_t stream) {
    int64_t total = a.n * a.c * a.out_h * a.out_w;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, mat, mat_idx, dst, total);
}

void warp_perspective_backward_data(const WarpArgs& a, const float* mat, const int32_t* mat_idx,
                                    const void* diff, double* acc, void* grad,
                                    cudaStream_t stream) {
    int64_t in_total = a.src_n * a.c * a.in_h * a.in_w, out_total = a.n * a.c * a.out_h * a.out_w;
    if (in_total == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(in_total) * sizeof(double), stream));
    if (out_total)
        scatter_kernel<<<grid_for(out_total), kBlock, 0, stream>>>(a, mat, mat_idx, diff, acc,
                                                                   out_total);
    round_image_kernel<<<grid_for(in_total), kBlock, 0, stream>>>(a, acc, grad, in_total);
}

void warp_perspective_backward_mat(const WarpArgs& a, const void* src, const float* mat,
                                   const int32_t* mat_idx, const void* diff, double* acc,
                                   float* grad, const int64_t* grad_strides, cudaStream_t stream) {
    int64_t entries = a.n * 9, pixels = a.n * a.out_h * a.out_w;
    if (entries == 0)
        return;
    NM_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(entries) * sizeof(double), stream));
    if (pixels)
        mat_kernel<<<grid_for(pixels), kBlock, 0, stream>>>(a, src, mat, mat_idx, diff, acc,
                                                            pixels);
    MatStrides st{{grad_strides[0], grad_strides[1], grad_strides[2]}};
    round_mat_kernel<<<grid_for(entries), kBlock, 0, stream>>>(acc, grad, st, entries);
}

}  // namespace neomeg::dnn::cuda::kern
