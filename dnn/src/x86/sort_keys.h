// The sort keys of Argsort and TopK on x86: each element of a line becomes a 64-bit unsigned key,
// its value's rank in the upper 32 bits and its position in the lower 32, so that an ordinary
// unsigned sort of the keys (vqsort, nth_element) gives naive's order exactly
// (naive/argsort_rank.h): NaN above every number and equal to the other NaNs, -0 equal to +0,
// equal values in src's order ascending and in reverse order descending (a descending key
// flips all 64 bits, so the position too). A sorted key's lower half says which element to copy,
// so values keep their bits (the sign of a zero, a NaN's payload).
// Files including this compile with OpenMP's flags (parallel.h).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/tensor.h"
#include "src/x86/flat_runs.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {

// The value's place in naive's ascending order as an unsigned number.
template <class T>
uint32_t value_rank(T v) {
    if constexpr (is_float_type_v<T>) {
        // Without branches: signs are random in a line, and a mispredicted branch per element
        // cost more than the rest of the key.
        uint32_t b = std::bit_cast<uint32_t>(static_cast<float>(v));
        uint32_t magnitude = b & 0x7FFFFFFFu;
        b = magnitude == 0 ? 0u : b;  // -0 ranks as +0
        uint32_t sign = static_cast<uint32_t>(static_cast<int32_t>(b) >> 31);
        uint32_t rank = b ^ (sign | 0x80000000u);
        return magnitude > 0x7F800000u ? 0xFFFFFFFFu : rank;  // +inf ranks 0xFF800000, NaN above
    } else if constexpr (std::is_signed_v<T>) {
        return static_cast<uint32_t>(static_cast<int32_t>(v)) ^ 0x80000000u;
    } else {
        return static_cast<uint32_t>(v);
    }
}

// The key of value v at position i; `flip` (all ones for descending, else 0) reverses the value
// ranks and the positions, so that descending is ascending's exact reverse.
template <class T>
uint64_t sort_key(T v, size_t i, uint32_t flip) {
    return (uint64_t{value_rank(v) ^ flip} << 32) | (static_cast<uint32_t>(i) ^ flip);
}

inline uint32_t rank_flip(bool descending) {
    return descending ? 0xFFFFFFFFu : 0u;
}

// One line of `n` elements at `src` with element stride `stride` as keys.
template <class T>
void make_sort_keys(const T* src, ptrdiff_t stride, size_t n, bool descending, uint64_t* keys) {
    uint32_t flip = rank_flip(descending);
    for (size_t i = 0; i < n; ++i)
        keys[i] = sort_key(src[static_cast<ptrdiff_t>(i) * stride], i, flip);
}

// The position a key of direction `flip` was made from.
inline uint32_t key_position(uint64_t key, uint32_t flip) {
    return static_cast<uint32_t>(key) ^ flip;
}

// Sorts keys ascending with vqsort (one sorter per thread: a sorter owns scratch memory).
void sort_keys(uint64_t* keys, size_t n);

// Calls f(row, keys) for every row of `rows`, split across threads, `keys` a scratch buffer of n
// keys per thread; `work` is the whole loop's work.
template <class F>
void for_each_sort_row(size_t rows, size_t n, F&& f) {
    // Sorting costs about log2(n) passes over a line.
    size_t work = rows * n * static_cast<size_t>(std::bit_width(n) + 1);
    parallel_ranges(rows, work, kParallelGrain, [&](size_t b, size_t e) {
        std::vector<uint64_t> keys(n);
        for (size_t r = b; r < e; ++r)
            f(r, keys.data());
    });
}

}  // namespace neomeg::dnn::x86
