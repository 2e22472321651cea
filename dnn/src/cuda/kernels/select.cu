// CondTake and NonZero: a flag per element in row-major order, CUB's exclusive scan of the flags
// for each taken element's place, then one pass that writes the taken elements and, from the last
// element's place, the count. The count stays on the device: the caller reads it (the
// static-shape contract of dnn/ops/defs/indexing.py).
#include <cub/device/device_scan.cuh>

#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
}

size_t scan_temp_bytes(int64_t n) {
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                  static_cast<int32_t*>(nullptr), static_cast<int>(n));
    return bytes;
}

struct Scratch {
    int32_t* flags;
    int32_t* pos;
    void* temp;
    size_t temp_bytes;
};

Scratch scratch_of(void* workspace, int64_t n) {
    auto* base = static_cast<char*>(workspace);
    size_t flag_bytes = aligned(static_cast<size_t>(n) * sizeof(int32_t));
    return {reinterpret_cast<int32_t*>(base), reinterpret_cast<int32_t*>(base + flag_bytes),
            base + 2 * flag_bytes, scan_temp_bytes(n)};
}

__global__ void mask_flags(const void* mask, Strided ml, int64_t n, int32_t* flags) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        flags[i] = static_cast<const bool*>(mask)[offset_of(ml, i)] ? 1 : 0;
}

// Compared in the compute type, as naive: -0.0 is zero, NaN is not.
__global__ void nonzero_flags(const void* src, DT dt, Strided sl, int64_t n, int32_t* flags) {
    bool fl = dt == DT::Float32 || dt == DT::Float16 || dt == DT::BFloat16;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t off = offset_of(sl, i);
        flags[i] = (fl ? load_float(src, dt, off) != 0.f : load_int(src, dt, off) != 0) ? 1 : 0;
    }
}

__device__ __forceinline__ void write_count(int64_t i, int64_t n, const int32_t* flags,
                                            const int32_t* pos, int32_t* count) {
    if (i == n - 1)
        *count = pos[i] + flags[i];
}

__global__ void take(const void* data, int elem_size, Strided dl, int64_t n, const int32_t* flags,
                     const int32_t* pos, void* values, int64_t vs, int32_t* indices, int64_t is,
                     int32_t* count) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        if (flags[i]) {
            int64_t k = pos[i];
            move_element(data, offset_of(dl, i), values, k * vs, elem_size);
            indices[k * is] = static_cast<int32_t>(i);
        }
        write_count(i, n, flags, pos, count);
    }
}

struct Coords {
    int ndim;
    int64_t shape[kMaxNdim];
    int64_t stride[2];
};

__global__ void write_coords(Coords c, int64_t n, const int32_t* flags, const int32_t* pos,
                             int32_t* coords, int32_t* count) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        if (flags[i]) {
            int64_t k = pos[i], rest = i;
            for (int d = c.ndim - 1; d >= 0; --d) {
                coords[d * c.stride[0] + k * c.stride[1]] = static_cast<int32_t>(rest % c.shape[d]);
                rest /= c.shape[d];
            }
        }
        write_count(i, n, flags, pos, count);
    }
}

void scan(const Scratch& s, int64_t n, cudaStream_t stream) {
    size_t bytes = s.temp_bytes;
    cub::DeviceScan::ExclusiveSum(s.temp, bytes, s.flags, s.pos, static_cast<int>(n), stream);
}

}  // namespace

size_t select_workspace_bytes(int64_t n) {
    if (n == 0)
        return 0;
    return 2 * aligned(static_cast<size_t>(n) * sizeof(int32_t)) + scan_temp_bytes(n);
}

void cond_take(const void* data, int elem_size, const Strided& data_layout, const void* mask,
               const Strided& mask_layout, int64_t n, void* values, int64_t values_stride,
               int32_t* indices, int64_t indices_stride, int32_t* count, void* workspace,
               cudaStream_t stream) {
    if (n == 0) {
        NM_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int32_t), stream));
        return;
    }
    Scratch s = scratch_of(workspace, n);
    mask_flags<<<grid_for(n), kBlock, 0, stream>>>(mask, mask_layout, n, s.flags);
    scan(s, n, stream);
    take<<<grid_for(n), kBlock, 0, stream>>>(data, elem_size, data_layout, n, s.flags, s.pos,
                                             values, values_stride, indices, indices_stride, count);
}

void nonzero(const void* src, DT dt, const Strided& src_layout, const int64_t* shape, int ndim,
             int64_t n, int32_t* coords, const int64_t* coord_strides, int32_t* count,
             void* workspace, cudaStream_t stream) {
    if (n == 0) {
        NM_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int32_t), stream));
        return;
    }
    Scratch s = scratch_of(workspace, n);
    nonzero_flags<<<grid_for(n), kBlock, 0, stream>>>(src, dt, src_layout, n, s.flags);
    scan(s, n, stream);
    Coords c{};
    c.ndim = ndim;
    for (int d = 0; d < ndim; ++d)
        c.shape[d] = shape[d];
    c.stride[0] = coord_strides[0];
    c.stride[1] = coord_strides[1];
    write_coords<<<grid_for(n), kBlock, 0, stream>>>(c, n, s.flags, s.pos, coords, count);
}

}  // namespace neomeg::dnn::cuda::kern
