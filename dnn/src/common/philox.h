// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator behind every random operator. Element i of a stream keyed by `seed`
// is word i % 4 of the block at counter i / 4, so its value depends only on (seed, i): kernels
// may split the work across any number of threads and still agree with the naive reference.
// Header-only and free of the standard library's state so that CUDA kernels can share it.
#pragma once

#include <cmath>
#include <cstdint>

#include "src/common/host_device.h"

namespace neomeg::dnn::philox {

struct Block {
    uint32_t w[4];
};
struct Key {
    uint32_t w[2];
};

inline constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

NM_HOST_DEVICE Block mix_round(Block c, Key k) {
    uint64_t p0 = uint64_t(kMul0) * c.w[0];
    uint64_t p1 = uint64_t(kMul1) * c.w[2];
    auto hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    auto hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    return {{hi1 ^ c.w[1] ^ k.w[0], lo1, hi0 ^ c.w[3] ^ k.w[1], lo0}};
}

NM_HOST_DEVICE Block philox4x32_10(Block counter, Key key) {
    counter = mix_round(counter, key);
    for (int r = 1; r < 10; ++r) {
        key.w[0] += kWeyl0;
        key.w[1] += kWeyl1;
        counter = mix_round(counter, key);
    }
    return counter;
}

NM_HOST_DEVICE Key key_of(uint64_t seed) {
    return {{uint32_t(seed), uint32_t(seed >> 32)}};
}

// The block holding elements 4 * index .. 4 * index + 3 of the stream.
NM_HOST_DEVICE Block block_at(uint64_t seed, uint64_t index) {
    return philox4x32_10({{uint32_t(index), uint32_t(index >> 32), 0, 0}}, key_of(seed));
}

// Word i of the stream.
NM_HOST_DEVICE uint32_t bits_at(uint64_t seed, uint64_t i) {
    return block_at(seed, i / 4).w[i % 4];
}

// The top `bits` bits of x as a multiple of 2^-bits in [0, 1). With bits no larger than the
// target type's significand (24 float32, 11 float16, 8 bfloat16) every value is exact there, so
// rounding to that type can never produce 1.
NM_HOST_DEVICE float unit_interval(uint32_t x, int bits) {
    return float(x >> (32 - bits)) * (1.0f / float(1u << bits));
}

// Element i of a standard normal stream: Box-Muller on the pair of words (0, 1) or (2, 3) of
// block i / 4, cosine for the even element of the pair and sine for the odd one.
NM_HOST_DEVICE float gaussian_at(uint64_t seed, uint64_t i) {
    Block b = block_at(seed, i / 4);
    unsigned lane = unsigned(i % 4), pair = lane & 2u;
    // u1 in (0, 1] keeps the logarithm finite.
    float u1 = float((b.w[pair] >> 8) + 1u) * (1.0f / 16777216.0f);
    float u2 = unit_interval(b.w[pair + 1], 24);
    float r = std::sqrt(-2.0f * std::log(u1));
    float theta = 6.283185307179586f * u2;
    return (lane & 1u) ? r * std::sin(theta) : r * std::cos(theta);
}

}  // namespace neomeg::dnn::philox
