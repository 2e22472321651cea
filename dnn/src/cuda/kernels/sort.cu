// Row-wise sorting on CUB's stable segmented radix sort: every dtype becomes an order-preserving
// uint32 key (NaN the largest, -0 as +0), the positions ride along as values; Argsort and TopK
// gather their outputs from the sorted positions.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "src/common/philox.h"

#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ uint32_t float_key(float x) {
    if (x != x)
        return 0xffffffffu;
    if (x == 0)
        x = 0;  // -0 sorts with +0
    uint32_t b = __float_as_uint(x);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ uint32_t key_of(const void* p, DT dt, int64_t off) {
    if (dt == DT::Float32 || dt == DT::Float16 || dt == DT::BFloat16)
        return float_key(load_float(p, dt, off));
    return static_cast<uint32_t>(static_cast<int32_t>(load_int(p, dt, off))) ^ 0x80000000u;
}

// `reverse` lays each row out back to front, so that a stable sort keeps ties in descending
// position.
__global__ void make_keys(const void* src, DT dt, Strided l, int64_t total, int64_t n, bool reverse,
                          uint32_t* keys, int32_t* pos) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t j = reverse ? n - 1 - i % n : i % n;
        keys[i] = key_of(src, dt, offset_of(l, i - i % n + j));
        pos[i] = static_cast<int32_t>(j);
    }
}

__global__ void make_offsets(int32_t* offsets, int64_t rows, int64_t stride) {
    for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r <= rows;
         r += static_cast<int64_t>(gridDim.x) * blockDim.x)
        offsets[r] = static_cast<int32_t>(r * stride);
}

__global__ void copy_prefix(const int32_t* order, int64_t rows, int64_t n, int64_t k,
                            uint32_t* keys) {
    int64_t total = rows * k;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        keys[i] = static_cast<uint32_t>(order[(i / k) * n + i % k]);
}

__global__ void put_prefix(const uint32_t* keys, int64_t rows, int64_t n, int64_t k,
                           int32_t* order) {
    int64_t total = rows * k;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        order[(i / k) * n + i % k] = static_cast<int32_t>(keys[i]);
}

__device__ __forceinline__ void move(const void* src, int64_t so, void* dst, int64_t d0, DT dt) {
    switch (dt) {
        case DT::Float32:
        case DT::Int32:
            static_cast<uint32_t*>(dst)[d0] = static_cast<const uint32_t*>(src)[so];
            return;
        case DT::Float16:
        case DT::BFloat16:
        case DT::Int16:
            static_cast<uint16_t*>(dst)[d0] = static_cast<const uint16_t*>(src)[so];
            return;
        default:
            static_cast<uint8_t*>(dst)[d0] = static_cast<const uint8_t*>(src)[so];
            return;
    }
}

__global__ void gather_kernel(const void* src, DT dt, Strided sl, const int32_t* order,
                              int64_t rows, int64_t n, int64_t k, bool kth_only, void* values,
                              Strided vl, int32_t* indices, Strided il) {
    int64_t per_row = kth_only ? 1 : k, total = rows * per_row;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t r = i / per_row, j = kth_only ? k - 1 : i % per_row;
        int32_t p = order[r * n + j];
        if (values)
            move(src, offset_of(sl, r * n + p), values, offset_of(vl, i), dt);
        if (indices)
            indices[offset_of(il, i)] = p;
    }
}

// Workspace: keys in/out (uint32), positions in (int32), offsets (rows + 1), CUB's scratch.
struct Parts {
    uint32_t *keys_in, *keys_out;
    int32_t *pos_in, *offsets;
    void* temp;
    size_t temp_bytes;
};

size_t align(size_t x) {
    return (x + 255) / 256 * 256;
}

// CUB's scratch for sorting every row (pairs) and for re-sorting row prefixes (keys alone).
size_t cub_bytes(int64_t rows, int64_t n) {
    size_t pairs = 0, keys = 0;
    int items = static_cast<int>(rows * n), segments = static_cast<int>(rows);
    cub::DeviceSegmentedRadixSort::SortPairs(
            nullptr, pairs, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
            static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), items, segments,
            static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr));
    cub::DeviceSegmentedRadixSort::SortKeys(nullptr, keys, static_cast<const uint32_t*>(nullptr),
                                            static_cast<uint32_t*>(nullptr), items, segments,
                                            static_cast<const int32_t*>(nullptr),
                                            static_cast<const int32_t*>(nullptr));
    return pairs > keys ? pairs : keys;
}

Parts parts_of(void* ws, int64_t rows, int64_t n) {
    auto* p = static_cast<char*>(ws);
    size_t total = static_cast<size_t>(rows * n);
    Parts r;
    r.keys_in = reinterpret_cast<uint32_t*>(p);
    p += align(total * 4);
    r.keys_out = reinterpret_cast<uint32_t*>(p);
    p += align(total * 4);
    r.pos_in = reinterpret_cast<int32_t*>(p);
    p += align(total * 4);
    r.offsets = reinterpret_cast<int32_t*>(p);
    p += align(static_cast<size_t>(rows + 1) * 4);
    r.temp = p;
    r.temp_bytes = cub_bytes(rows, n);
    return r;
}

__global__ void permutation_keys(uint64_t seed, int64_t n, uint64_t* keys, int32_t* pos) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        auto u = static_cast<uint64_t>(i);
        keys[i] = (uint64_t(philox::bits_at(seed, 2 * u)) << 32) | philox::bits_at(seed, 2 * u + 1);
        pos[i] = static_cast<int32_t>(i);
    }
}

__global__ void store_permutation(const int32_t* perm, int64_t n, void* dst, DT dt, Strided l) {
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x)
        store_int(dst, dt, offset_of(l, j), perm[j]);
}

size_t permutation_cub_bytes(int64_t n) {
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                    static_cast<uint64_t*>(nullptr),
                                    static_cast<const int32_t*>(nullptr),
                                    static_cast<int32_t*>(nullptr), static_cast<int>(n));
    return bytes;
}

}  // namespace

size_t permutation_workspace_bytes(int64_t n) {
    auto u = static_cast<size_t>(n);
    return 2 * align(u * 8) + 2 * align(u * 4) + permutation_cub_bytes(n);
}

void permutation(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, void* workspace,
                 cudaStream_t stream) {
    if (n == 0)
        return;
    auto* p = static_cast<char*>(workspace);
    auto u = static_cast<size_t>(n);
    auto* keys_in = reinterpret_cast<uint64_t*>(p);
    auto* keys_out = reinterpret_cast<uint64_t*>(p + align(u * 8));
    auto* pos_in = reinterpret_cast<int32_t*>(p + 2 * align(u * 8));
    auto* pos_out = reinterpret_cast<int32_t*>(p + 2 * align(u * 8) + align(u * 4));
    void* temp = p + 2 * align(u * 8) + 2 * align(u * 4);
    size_t temp_bytes = permutation_cub_bytes(n);
    permutation_keys<<<grid_for(n), kBlock, 0, stream>>>(seed, n, keys_in, pos_in);
    // Radix sort is stable: equal keys keep ascending indices, naive's tie rule.
    cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, pos_in, pos_out,
                                    static_cast<int>(n), 0, 64, stream);
    store_permutation<<<grid_for(n), kBlock, 0, stream>>>(pos_out, n, dst, dt, layout);
}

size_t sort_workspace_bytes(int64_t rows, int64_t n) {
    size_t total = static_cast<size_t>(rows * n);
    return 3 * align(total * 4) + align(static_cast<size_t>(rows + 1) * 4) + cub_bytes(rows, n);
}

void sort_rows(const void* src, DT dt, const Strided& src_layout, int64_t rows, int64_t n,
               bool descending, int32_t* order, void* workspace, cudaStream_t stream) {
    int64_t total = rows * n;
    if (total == 0)
        return;
    Parts w = parts_of(workspace, rows, n);
    // Descending is ascending's exact reverse (naive/argsort_rank.h): ties in descending
    // position, which the stable sort gives from rows laid out back to front.
    make_keys<<<grid_for(total), kBlock, 0, stream>>>(src, dt, src_layout, total, n, descending,
                                                      w.keys_in, w.pos_in);
    make_offsets<<<grid_for(rows + 1), kBlock, 0, stream>>>(w.offsets, rows, n);
    if (descending)
        cub::DeviceSegmentedRadixSort::SortPairsDescending(
                w.temp, w.temp_bytes, w.keys_in, w.keys_out, w.pos_in, order,
                static_cast<int>(total), static_cast<int>(rows), w.offsets, w.offsets + 1, 0, 32,
                stream);
    else
        cub::DeviceSegmentedRadixSort::SortPairs(w.temp, w.temp_bytes, w.keys_in, w.keys_out,
                                                 w.pos_in, order, static_cast<int>(total),
                                                 static_cast<int>(rows), w.offsets, w.offsets + 1,
                                                 0, 32, stream);
}

void sort_prefix_indices(int32_t* order, int64_t rows, int64_t n, int64_t k, void* workspace,
                         cudaStream_t stream) {
    if (rows * k == 0)
        return;
    Parts w = parts_of(workspace, rows, n);
    copy_prefix<<<grid_for(rows * k), kBlock, 0, stream>>>(order, rows, n, k, w.keys_in);
    make_offsets<<<grid_for(rows + 1), kBlock, 0, stream>>>(w.offsets, rows, k);
    // The positions are the keys.
    cub::DeviceSegmentedRadixSort::SortKeys(w.temp, w.temp_bytes, w.keys_in, w.keys_out,
                                            static_cast<int>(rows * k), static_cast<int>(rows),
                                            w.offsets, w.offsets + 1, 0, 32, stream);
    put_prefix<<<grid_for(rows * k), kBlock, 0, stream>>>(w.keys_out, rows, n, k, order);
}

void gather_sorted(const void* src, DT dt, const Strided& src_layout, const int32_t* order,
                   int64_t rows, int64_t n, int64_t k, bool kth_only, void* values,
                   const Strided& values_layout, int32_t* indices, const Strided& indices_layout,
                   cudaStream_t stream) {
    int64_t total = rows * (kth_only ? 1 : k);
    if (total)
        gather_kernel<<<grid_for(total), kBlock, 0, stream>>>(src, dt, src_layout, order, rows, n,
                                                              k, kth_only, values, values_layout,
                                                              indices, indices_layout);
}

}  // namespace neomeg::dnn::cuda::kern
