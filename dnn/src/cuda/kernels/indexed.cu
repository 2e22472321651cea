// Advanced indexing and torch.scatter on the walk of indexed_walk.h. Gather and Set move raw
// bytes; Add rounds each addition as naive does (float16/bfloat16 through float, integers
// wrapping), through a compare-and-swap on the aligned 32-bit word for the narrow dtypes. Set
// elects the last write of each element first, so repeated indices give naive's answer.
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"
#include "src/cuda/kernels/indexed_walk.h"

namespace neomeg::dnn::cuda::kern {
namespace {

// Replaces the 1- or 2-byte element at byte address p by f(its bits), atomically.
template <class F>
__device__ __forceinline__ void atomic_update_narrow(void* p, int size, F f) {
    auto addr = reinterpret_cast<uintptr_t>(p);
    auto* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    unsigned mask = (size == 1 ? 0xffu : 0xffffu) << shift;
    unsigned old = *word, assumed;
    do {
        assumed = old;
        unsigned bits = f((assumed & mask) >> shift);
        old = atomicCAS(word, assumed, (assumed & ~mask) | ((bits << shift) & mask));
    } while (old != assumed);
}

// dst[d] += src[s] with naive's rounding: float32 adds in float, float16/bfloat16 add in float
// and round once, integers wrap (so adding the raw bits modulo the width is exact).
__device__ __forceinline__ void atomic_add(void* dst, int64_t d, const void* src, int64_t s,
                                           DT dt) {
    switch (dt) {
        case DT::Float32:
            atomicAdd(static_cast<float*>(dst) + d, static_cast<const float*>(src)[s]);
            return;
        case DT::Int32:
            atomicAdd(static_cast<unsigned int*>(dst) + d,
                      static_cast<const unsigned int*>(src)[s]);
            return;
        case DT::Float16: {
            float v = __half2float(static_cast<const __half*>(src)[s]);
            atomic_update_narrow(static_cast<__half*>(dst) + d, 2, [v](unsigned bits) {
                float old = __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
                return static_cast<unsigned>(__half_as_ushort(__float2half_rn(old + v)));
            });
            return;
        }
        case DT::BFloat16: {
            float v = __bfloat162float(static_cast<const __nv_bfloat16*>(src)[s]);
            atomic_update_narrow(static_cast<__nv_bfloat16*>(dst) + d, 2, [v](unsigned bits) {
                float old =
                        __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(bits)));
                return static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(old + v)));
            });
            return;
        }
        case DT::Int16: {
            unsigned v = static_cast<const uint16_t*>(src)[s];
            atomic_update_narrow(static_cast<uint16_t*>(dst) + d, 2,
                                 [v](unsigned bits) { return bits + v; });
            return;
        }
        case DT::Int8:
        case DT::Uint8: {
            unsigned v = static_cast<const uint8_t*>(src)[s];
            atomic_update_narrow(static_cast<uint8_t*>(dst) + d, 1,
                                 [v](unsigned bits) { return bits + v; });
            return;
        }
        case DT::Bool:
            // The layout rule rejects accumulating into bool.
            return;
    }
}

__global__ void walk_kernel(IndexedArgs a) {
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.n;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        IndexedTarget t = indexed_target(a, a.shape, j);
        switch (a.mode) {
            case IndexedMode::Gather:
                move_element(a.indexed, t.indexed, a.plain, t.plain, a.elem_size);
                break;
            case IndexedMode::Set:
                if (a.winner[t.key] == static_cast<uint32_t>(t.rank + 1))
                    move_element(a.plain, t.plain, a.indexed, t.indexed, a.elem_size);
                break;
            case IndexedMode::Add:
                atomic_add(a.indexed, t.indexed, a.plain, t.plain, a.dt);
                break;
        }
    }
}

__global__ void elect_kernel(IndexedArgs a) {
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.elect_n;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        IndexedTarget t = indexed_target(a, a.elect_shape, j);
        atomicMax(a.winner + t.key, static_cast<uint32_t>(t.rank + 1));
    }
}

__global__ void bad_index_kernel(IndexRange r, unsigned long long* first) {
    for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < r.n;
         p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int32_t v = r.index[offset_of(r.layout, p)];
        if (v < r.lo || v >= r.hi)
            atomicMin(first, (static_cast<unsigned long long>(p) << 32) |
                                     static_cast<unsigned long long>(static_cast<uint32_t>(v)));
    }
}

}  // namespace

void indexed(const IndexedArgs& a, cudaStream_t stream) {
    if (a.n == 0)
        return;
    if (a.mode == IndexedMode::Set) {
        NM_CUDA_CHECK(cudaMemsetAsync(a.winner, 0,
                                      static_cast<size_t>(a.nr_keys) * sizeof(uint32_t), stream));
        elect_kernel<<<grid_for(a.elect_n), kBlock, 0, stream>>>(a);
    }
    walk_kernel<<<grid_for(a.n), kBlock, 0, stream>>>(a);
}

void find_bad_index(const IndexRange* ranges, int nr, unsigned long long* first,
                    cudaStream_t stream) {
    NM_CUDA_CHECK(cudaMemsetAsync(first, 0xff, static_cast<size_t>(nr) * sizeof(unsigned long long),
                                  stream));
    for (int k = 0; k < nr; ++k)
        if (ranges[k].n)
            bad_index_kernel<<<grid_for(ranges[k].n), kBlock, 0, stream>>>(ranges[k], first + k);
}

}  // namespace neomeg::dnn::cuda::kern
