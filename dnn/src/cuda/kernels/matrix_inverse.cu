// MatrixInverse by Gauss-Jordan elimination, one block per matrix: thread 0 picks the pivot as
// naive does (the first largest |a[r][col]|), the block swaps, scales and clears in parallel.
// Every element's update is naive's expression on the same operands, so the inverse is naive's
// to the bit (__dmul_rn/__dsub_rn keep nvcc from fusing them).
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

constexpr int kThreads = 256;

// Per matrix: a (n x n), inv (n x n), f (n): the column factors of one elimination step.
__device__ __forceinline__ double* matrix_work(void* work, int64_t n, int64_t b) {
    return static_cast<double*>(work) + b * (2 * n * n + n);
}

__global__ void inverse_kernel(InverseArgs a, void* work, unsigned long long* singular) {
    __shared__ int finite;
    __shared__ double pivot;
    __shared__ int64_t pivot_row;
    const int64_t n = a.n, nn = n * n;
    for (int64_t b = blockIdx.x; b < a.batch; b += gridDim.x) {
        double* m = matrix_work(work, n, b);
        double* inv = m + nn;
        double* f = inv + nn;
        int64_t so = offset_of(a.src_batch, b);
        if (threadIdx.x == 0)
            finite = 1;
        __syncthreads();
        for (int64_t i = threadIdx.x; i < nn; i += kThreads) {
            int64_t r = i / n, c = i % n;
            double v = load_float(a.src, a.dt, so + r * a.src_row + c * a.src_col);
            m[i] = v;
            inv[i] = r == c ? 1.0 : 0.0;
            if (!isfinite(v))
                finite = 0;
        }
        __syncthreads();
        if (!finite) {
            for (int64_t i = threadIdx.x; i < nn; i += kThreads)
                inv[i] = __longlong_as_double(0x7ff8000000000000ll);
            __syncthreads();
            continue;
        }
        for (int64_t col = 0; col < n; ++col) {
            if (threadIdx.x == 0) {
                int64_t p = col;
                for (int64_t r = col + 1; r < n; ++r)
                    if (fabs(m[r * n + col]) > fabs(m[p * n + col]))
                        p = r;
                pivot_row = p;
                pivot = m[p * n + col];
                if (pivot == 0.0)
                    atomicMin(singular, static_cast<unsigned long long>(b));
            }
            __syncthreads();
            if (pivot == 0.0)
                break;
            int64_t p = pivot_row;
            if (p != col)
                for (int64_t j = threadIdx.x; j < n; j += kThreads) {
                    double t = m[p * n + j];
                    m[p * n + j] = m[col * n + j];
                    m[col * n + j] = t;
                    t = inv[p * n + j];
                    inv[p * n + j] = inv[col * n + j];
                    inv[col * n + j] = t;
                }
            __syncthreads();
            for (int64_t j = threadIdx.x; j < n; j += kThreads) {
                m[col * n + j] = __ddiv_rn(m[col * n + j], pivot);
                inv[col * n + j] = __ddiv_rn(inv[col * n + j], pivot);
            }
            __syncthreads();
            for (int64_t r = threadIdx.x; r < n; r += kThreads)
                f[r] = m[r * n + col];
            __syncthreads();
            for (int64_t i = threadIdx.x; i < nn; i += kThreads) {
                int64_t r = i / n, j = i % n;
                if (r == col || f[r] == 0.0)
                    continue;
                m[i] = __dsub_rn(m[i], __dmul_rn(f[r], m[col * n + j]));
                inv[i] = __dsub_rn(inv[i], __dmul_rn(f[r], inv[col * n + j]));
            }
            __syncthreads();
        }
        __syncthreads();
    }
}

__global__ void store_kernel(InverseArgs a, const void* work, int64_t count) {
    const int64_t n = a.n, nn = n * n;
    int64_t total = count * nn;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t b = i / nn, e = i % nn, r = e / n, c = e % n;
        const double* inv = static_cast<const double*>(work) + b * (2 * nn + n) + nn;
        store_float(a.dst, a.dt, offset_of(a.dst_batch, b) + r * a.dst_row + c * a.dst_col, inv[e]);
    }
}

}  // namespace

size_t inverse_workspace_bytes(int64_t n, int64_t batch) {
    return static_cast<size_t>(batch * (2 * n * n + n)) * sizeof(double);
}

void inverse_compute(const InverseArgs& a, void* workspace, unsigned long long* singular,
                     cudaStream_t stream) {
    NM_CUDA_CHECK(cudaMemsetAsync(singular, 0xff, sizeof(unsigned long long), stream));
    if (a.batch == 0 || a.n == 0)
        return;
    int64_t blocks = a.batch < 65535 * 4 ? a.batch : 65535 * 4;
    inverse_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a, workspace, singular);
}

void inverse_store(const InverseArgs& a, const void* workspace, int64_t count,
                   cudaStream_t stream) {
    int64_t total = count * a.n * a.n;
    if (total)
        store_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, workspace, count);
}

}  // namespace neomeg::dnn::cuda::kern
