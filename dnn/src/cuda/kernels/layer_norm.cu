// LayerNorm and GroupNorm forward and backward: one block per row (block reductions in double:
// the mean, then the variance about it, as naive's two passes; a GroupNorm row is one (sample,
// group) run), and for the affine gradients one thread per LayerNorm column summing over the
// rows, or one block per GroupNorm channel.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

constexpr int kThreads = 256;

// Sum of v over the block; every thread gets the total.
__device__ double block_sum(double v, double* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (static_cast<int>(threadIdx.x) < s)
            shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    double total = shared[0];
    __syncthreads();
    return total;
}

// The weight (and bias) element of row r's element k.
__device__ __forceinline__ int64_t weight_index(const LayerNormArgs& a, int64_t r, int64_t k) {
    return a.groups ? (r % a.groups) * (a.len / a.spatial) + k / a.spatial : k;
}

__device__ __forceinline__ double at(const void* p, DT dt, const Strided& l, int64_t i) {
    return static_cast<double>(load_float(p, dt, offset_of(l, i)));
}

__global__ void forward_kernel(LayerNormArgs a, void* dst, DT dst_dt, Strided dl) {
    __shared__ double shared[kThreads];
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        int64_t base = r * a.len;
        double sum = 0;
        for (int64_t k = threadIdx.x; k < a.len; k += kThreads)
            sum += at(a.src, a.src_dt, a.src_layout, base + k);
        double mean = a.len ? block_sum(sum, shared) / static_cast<double>(a.len) : 0.0;
        double sq = 0;
        for (int64_t k = threadIdx.x; k < a.len; k += kThreads) {
            double d = at(a.src, a.src_dt, a.src_layout, base + k) - mean;
            sq += d * d;
        }
        double var = a.len ? block_sum(sq, shared) / static_cast<double>(a.len) : 0.0;
        double rstd = 1.0 / sqrt(var + a.eps);
        for (int64_t k = threadIdx.x; k < a.len; k += kThreads) {
            double y = (at(a.src, a.src_dt, a.src_layout, base + k) - mean) * rstd;
            if (a.weight)
                y = y * at(a.weight, a.weight_dt, a.weight_layout, weight_index(a, r, k)) +
                    at(a.bias, a.weight_dt, a.bias_layout, weight_index(a, r, k));
            store_float(dst, dst_dt, offset_of(dl, base + k), y);
        }
        if (threadIdx.x == 0) {
            store_float(a.mean, a.stat_dt, offset_of(a.mean_layout, r), mean);
            store_float(a.rstd, a.stat_dt, offset_of(a.rstd_layout, r), rstd);
        }
    }
}

__global__ void backward_kernel(LayerNormArgs a, const void* diff, DT ddt, Strided dyl, void* grad,
                                Strided gl) {
    __shared__ double shared[kThreads];
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        int64_t base = r * a.len;
        double mu = at(a.mean, a.stat_dt, a.mean_layout, r);
        double rs = at(a.rstd, a.stat_dt, a.rstd_layout, r);
        double gs = 0, gxs = 0;
        for (int64_t k = threadIdx.x; k < a.len; k += kThreads) {
            double g = at(diff, ddt, dyl, base + k);
            if (a.weight)
                g *= at(a.weight, a.weight_dt, a.weight_layout, weight_index(a, r, k));
            double xhat = (at(a.src, a.src_dt, a.src_layout, base + k) - mu) * rs;
            gs += g;
            gxs += g * xhat;
        }
        double n = a.len ? static_cast<double>(a.len) : 1.0;
        double g_mean = block_sum(gs, shared) / n, gx_mean = block_sum(gxs, shared) / n;
        for (int64_t k = threadIdx.x; k < a.len; k += kThreads) {
            double g = at(diff, ddt, dyl, base + k);
            if (a.weight)
                g *= at(a.weight, a.weight_dt, a.weight_layout, weight_index(a, r, k));
            double xhat = (at(a.src, a.src_dt, a.src_layout, base + k) - mu) * rs;
            store_float(grad, ddt, offset_of(gl, base + k), rs * (g - g_mean - xhat * gx_mean));
        }
    }
}

__global__ void affine_grad_kernel(LayerNormArgs a, const void* diff, DT ddt, Strided dyl,
                                   void* dweight, Strided dwl, void* dbias, Strided dbl) {
    for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < a.len;
         k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        double dw = 0, db = 0;
        for (int64_t r = 0; r < a.rows; ++r) {
            double mu = at(a.mean, a.stat_dt, a.mean_layout, r);
            double rs = at(a.rstd, a.stat_dt, a.rstd_layout, r);
            double dy = at(diff, ddt, dyl, r * a.len + k);
            dw += dy * (at(a.src, a.src_dt, a.src_layout, r * a.len + k) - mu) * rs;
            db += dy;
        }
        store_float(dweight, a.weight_dt, offset_of(dwl, k), dw);
        store_float(dbias, a.weight_dt, offset_of(dbl, k), db);
    }
}

// Channel c of sample n is the run of `spatial` elements at (n * channels + c) * spatial, in row
// (n * groups + c / (channels / groups)).
__global__ void group_affine_grad_kernel(LayerNormArgs a, int64_t channels, const void* diff,
                                         DT ddt, Strided dyl, void* dweight, Strided dwl,
                                         void* dbias, Strided dbl) {
    __shared__ double shared[kThreads];
    int64_t samples = a.rows / a.groups, per_group = channels / a.groups;
    for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
        double dw = 0, db = 0;
        for (int64_t e = threadIdx.x; e < samples * a.spatial; e += kThreads) {
            int64_t n = e / a.spatial, i = (n * channels + c) * a.spatial + e % a.spatial;
            int64_t r = n * a.groups + c / per_group;
            double mu = at(a.mean, a.stat_dt, a.mean_layout, r);
            double rs = at(a.rstd, a.stat_dt, a.rstd_layout, r);
            double dy = at(diff, ddt, dyl, i);
            dw += dy * (at(a.src, a.src_dt, a.src_layout, i) - mu) * rs;
            db += dy;
        }
        dw = block_sum(dw, shared);
        db = block_sum(db, shared);
        if (threadIdx.x == 0) {
            store_float(dweight, a.weight_dt, offset_of(dwl, c), dw);
            store_float(dbias, a.weight_dt, offset_of(dbl, c), db);
        }
    }
}

unsigned row_blocks(int64_t rows) {
    return static_cast<unsigned>(rows < 65535 * 4 ? rows : 65535 * 4);
}

}  // namespace

void layer_norm_forward(const LayerNormArgs& a, void* dst, DT dst_dt, const Strided& dst_layout,
                        cudaStream_t stream) {
    if (a.rows)
        forward_kernel<<<row_blocks(a.rows), kThreads, 0, stream>>>(a, dst, dst_dt, dst_layout);
}

void layer_norm_backward(const LayerNormArgs& a, const void* diff, DT diff_dt,
                         const Strided& diff_layout, void* grad, const Strided& grad_layout,
                         void* dweight, const Strided& dweight_layout, void* dbias,
                         const Strided& dbias_layout, cudaStream_t stream) {
    if (a.rows)
        backward_kernel<<<row_blocks(a.rows), kThreads, 0, stream>>>(a, diff, diff_dt, diff_layout,
                                                                     grad, grad_layout);
    if (dweight && a.len)
        affine_grad_kernel<<<grid_for(a.len), kBlock, 0, stream>>>(
                a, diff, diff_dt, diff_layout, dweight, dweight_layout, dbias, dbias_layout);
}

void group_norm_affine_grad(const LayerNormArgs& a, int64_t channels, const void* diff, DT diff_dt,
                            const Strided& diff_layout, void* dweight,
                            const Strided& dweight_layout, void* dbias, const Strided& dbias_layout,
                            cudaStream_t stream) {
    if (channels)
        group_affine_grad_kernel<<<row_blocks(channels), kThreads, 0, stream>>>(
                a, channels, diff, diff_dt, diff_layout, dweight, dweight_layout, dbias,
                dbias_layout);
}

}  // namespace neomeg::dnn::cuda::kern
