// The Philox generators, dropout and the non-finite check. The generators call the same
// philox.h functions as the naive kernels, so uniform values and dropout masks are bit-identical
// to the CPU's; Gaussian values go through the GPU's logf/sinf/cosf, within an ulp or two of the
// host's.
#include "src/common/philox.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

#define NM_GRID_STRIDE(i, n)                                                               \
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void uniform_kernel(void* dst, DT dt, Strided l, int64_t n, uint64_t seed, int bits) {
    NM_GRID_STRIDE(i, n) {
        float u = philox::unit_interval(philox::bits_at(seed, static_cast<uint64_t>(i)), bits);
        store_float(dst, dt, offset_of(l, i), static_cast<double>(u));
    }
}

__global__ void gaussian_kernel(void* dst, DT dt, Strided l, int64_t n, uint64_t seed, double mean,
                                double std) {
    NM_GRID_STRIDE(i, n) {
        double g = static_cast<double>(philox::gaussian_at(seed, static_cast<uint64_t>(i)));
        // Rounded to float first, as the naive kernel's store does.
        store_float(dst, dt, offset_of(l, i), static_cast<float>(mean + std * g));
    }
}

__global__ void dropout_forward_kernel(const void* src, DT sdt, Strided sl, void* dst, DT ddt,
                                       Strided dl, uint8_t* mask, Strided ml, int64_t n,
                                       uint64_t seed, float drop_prob, double scale) {
    NM_GRID_STRIDE(i, n) {
        float u = philox::unit_interval(philox::bits_at(seed, static_cast<uint64_t>(i)), 24);
        bool keep = u >= drop_prob;
        mask[offset_of(ml, i)] = keep ? 1 : 0;
        double v = keep ? static_cast<double>(load_float(src, sdt, offset_of(sl, i))) * scale : 0.0;
        store_float(dst, ddt, offset_of(dl, i), static_cast<float>(v));
    }
}

__global__ void dropout_backward_kernel(const void* diff, DT ddt, Strided dl, const uint8_t* mask,
                                        Strided ml, void* grad, DT gdt, Strided gl, int64_t n,
                                        double scale) {
    NM_GRID_STRIDE(i, n) {
        double v = mask[offset_of(ml, i)]
                           ? static_cast<double>(load_float(diff, ddt, offset_of(dl, i))) * scale
                           : 0.0;
        store_float(grad, gdt, offset_of(gl, i), static_cast<float>(v));
    }
}

__global__ void find_non_finite_kernel(const void* src, DT dt, Strided l, int64_t n,
                                       int32_t* flag) {
    bool found = false;
    NM_GRID_STRIDE(i, n) {
        float v = load_float(src, dt, offset_of(l, i));
        found = found || !isfinite(v);
    }
    // Every writer writes the same value: no atomics needed.
    if (found)
        *flag = 1;
}

#undef NM_GRID_STRIDE

}  // namespace

void uniform(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, int bits,
             cudaStream_t stream) {
    if (n)
        uniform_kernel<<<grid_for(n), kBlock, 0, stream>>>(dst, dt, layout, n, seed, bits);
}

void gaussian(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, double mean,
              double std, cudaStream_t stream) {
    if (n)
        gaussian_kernel<<<grid_for(n), kBlock, 0, stream>>>(dst, dt, layout, n, seed, mean, std);
}

void dropout_forward(const void* src, DT src_dt, const Strided& src_layout, void* dst, DT dst_dt,
                     const Strided& dst_layout, void* mask, const Strided& mask_layout, int64_t n,
                     uint64_t seed, float drop_prob, double scale, cudaStream_t stream) {
    if (n)
        dropout_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(
                src, src_dt, src_layout, dst, dst_dt, dst_layout, static_cast<uint8_t*>(mask),
                mask_layout, n, seed, drop_prob, scale);
}

void dropout_backward(const void* diff, DT diff_dt, const Strided& diff_layout, const void* mask,
                      const Strided& mask_layout, void* grad, DT grad_dt,
                      const Strided& grad_layout, int64_t n, double scale, cudaStream_t stream) {
    if (n)
        dropout_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(
                diff, diff_dt, diff_layout, static_cast<const uint8_t*>(mask), mask_layout, grad,
                grad_dt, grad_layout, n, scale);
}

void find_non_finite(const void* src, DT dt, const Strided& layout, int64_t n, int32_t* flag,
                     cudaStream_t stream) {
    if (n)
        find_non_finite_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, dt, layout, n, flag);
}

}  // namespace neomeg::dnn::cuda::kern
