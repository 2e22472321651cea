// Device helpers shared by the .cu files: element loads and stores by runtime dtype (the dtype
// switch is uniform across a warp, and one kernel per arithmetic instead of one per dtype pair
// keeps nvcc's work and the binary small), and offsets of a strided layout from a linear index.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda::kern {

inline constexpr int kBlock = 256;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, not one per element.
inline unsigned grid_for(int64_t n) {
    int64_t blocks = (n + kBlock - 1) / kBlock;
    return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Element offset of linear (row-major) index i in layout l, whose ndim and shape equal the
// walk's (all tensors of a call are collapsed together). Index is uint32 when every offset fits,
// which saves the 64-bit divisions.
template <class Index>
__device__ __forceinline__ int64_t offset_of(const Strided& l, Index i) {
    int64_t off = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
        Index size = static_cast<Index>(l.shape[d]);
        Index q = i / size;
        off += static_cast<int64_t>(i - q * size) * l.stride[d];
        i = q;
    }
    return off;
}

// Whether every offset of the layout, and the element count n, fit an unsigned 32-bit index walk
// (offset_of with Index = uint32_t).
inline bool fits_uint32(const Strided& l, int64_t n) {
    if (n >= (int64_t{1} << 31))
        return false;
    int64_t span = 0;
    for (int d = 0; d < l.ndim; ++d)
        span += (l.shape[d] - 1) * (l.stride[d] < 0 ? -l.stride[d] : l.stride[d]);
    return span < (int64_t{1} << 31);
}

// Calls launch(Index{}) with Index = uint32_t where `small` (every layout of the walk
// fits_uint32), else int64_t: the host half of an index walk.
template <class Launch>
void with_index_type(bool small, Launch&& launch) {
    if (small)
        launch(uint32_t{});
    else
        launch(int64_t{});
}

// The device half: f(i) for every linear index i < n, a grid-stride loop in Index.
template <class Index, class F>
__device__ __forceinline__ void grid_stride(int64_t n, F&& f) {
    const Index end = static_cast<Index>(n);
    for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
         i += static_cast<Index>(gridDim.x) * blockDim.x)
        f(i);
}

// Element so of src to element d0 of dst as raw bytes of `size` (4, 2 or 1): gathers and
// compactions move any dtype without converting it.
__device__ __forceinline__ void move_element(const void* src, int64_t so, void* dst, int64_t d0,
                                             int size) {
    switch (size) {
        case 4:
            static_cast<uint32_t*>(dst)[d0] = static_cast<const uint32_t*>(src)[so];
            return;
        case 2:
            static_cast<uint16_t*>(dst)[d0] = static_cast<const uint16_t*>(src)[so];
            return;
        default:
            static_cast<uint8_t*>(dst)[d0] = static_cast<const uint8_t*>(src)[so];
            return;
    }
}

__device__ __forceinline__ float load_float(const void* p, DT dt, int64_t off) {
    switch (dt) {
        case DT::Float32:
            return static_cast<const float*>(p)[off];
        case DT::Float16:
            return __half2float(static_cast<const __half*>(p)[off]);
        case DT::BFloat16:
            return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[off]);
        case DT::Int8:
            return static_cast<float>(static_cast<const int8_t*>(p)[off]);
        case DT::Uint8:
            return static_cast<float>(static_cast<const uint8_t*>(p)[off]);
        case DT::Int16:
            return static_cast<float>(static_cast<const int16_t*>(p)[off]);
        case DT::Int32:
            return static_cast<float>(static_cast<const int32_t*>(p)[off]);
        case DT::Bool:
            return static_cast<const bool*>(p)[off] ? 1.f : 0.f;
    }
    return 0.f;
}

__device__ __forceinline__ int64_t load_int(const void* p, DT dt, int64_t off) {
    switch (dt) {
        case DT::Int8:
            return static_cast<const int8_t*>(p)[off];
        case DT::Uint8:
            return static_cast<const uint8_t*>(p)[off];
        case DT::Int16:
            return static_cast<const int16_t*>(p)[off];
        case DT::Int32:
            return static_cast<const int32_t*>(p)[off];
        case DT::Bool:
            return static_cast<const bool*>(p)[off] ? 1 : 0;
        default:
            // A float condition, which the layout rule rejects.
            return load_float(p, dt, off) != 0.f;
    }
}

// Float to integer: truncation toward zero, saturating at the type's range, NaN -> 0 (the naive
// rule of type_cvt.h).
template <class T>
__device__ __forceinline__ T saturate_int(double v, double lo, double hi) {
    if (v != v)
        return 0;
    v = trunc(v);
    if (v <= lo)
        return static_cast<T>(lo);
    if (v >= hi)
        return static_cast<T>(hi);
    return static_cast<T>(static_cast<int64_t>(v));
}

// Stores a float result (Elemwise's float arithmetic): floats round to nearest even, integers
// follow the float-to-integer rule, bool is != 0.
__device__ __forceinline__ void store_float(void* p, DT dt, int64_t off, double v) {
    switch (dt) {
        case DT::Float32:
            static_cast<float*>(p)[off] = static_cast<float>(v);
            return;
        // Through float, as the naive kernels store (static_cast<T>(static_cast<float>(v))).
        case DT::Float16:
            static_cast<__half*>(p)[off] = __float2half_rn(static_cast<float>(v));
            return;
        case DT::BFloat16:
            static_cast<__nv_bfloat16*>(p)[off] = __float2bfloat16_rn(static_cast<float>(v));
            return;
        case DT::Int8:
            static_cast<int8_t*>(p)[off] = saturate_int<int8_t>(v, -128., 127.);
            return;
        case DT::Uint8:
            static_cast<uint8_t*>(p)[off] = saturate_int<uint8_t>(v, 0., 255.);
            return;
        case DT::Int16:
            static_cast<int16_t*>(p)[off] = saturate_int<int16_t>(v, -32768., 32767.);
            return;
        case DT::Int32:
            static_cast<int32_t*>(p)[off] = saturate_int<int32_t>(v, -2147483648., 2147483647.);
            return;
        case DT::Bool:
            static_cast<bool*>(p)[off] = v != 0;
            return;
    }
}

// Stores an integer result: narrower integers keep the low bits (two's complement wrap), floats
// round to nearest even once from the exact value, bool is != 0.
__device__ __forceinline__ void store_int(void* p, DT dt, int64_t off, int64_t v) {
    switch (dt) {
        case DT::Int8:
            static_cast<int8_t*>(p)[off] = static_cast<int8_t>(static_cast<uint64_t>(v));
            return;
        case DT::Uint8:
            static_cast<uint8_t*>(p)[off] = static_cast<uint8_t>(static_cast<uint64_t>(v));
            return;
        case DT::Int16:
            static_cast<int16_t*>(p)[off] = static_cast<int16_t>(static_cast<uint64_t>(v));
            return;
        case DT::Int32:
            static_cast<int32_t*>(p)[off] = static_cast<int32_t>(static_cast<uint64_t>(v));
            return;
        case DT::Bool:
            static_cast<bool*>(p)[off] = v != 0;
            return;
        // Rounded once from the exact value (naive's round-to-odd through float32 gives the same).
        case DT::Float16:
            static_cast<__half*>(p)[off] = __double2half(static_cast<double>(v));
            return;
        case DT::BFloat16:
            static_cast<__nv_bfloat16*>(p)[off] = __double2bfloat16(static_cast<double>(v));
            return;
        default:
            store_float(p, dt, off, static_cast<double>(v));
            return;
    }
}

}  // namespace neomeg::dnn::cuda::kern
