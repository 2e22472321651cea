// Philox4x32-10 blocks computed several at a time (Highway, the instruction set chosen at run
// time): the same words as philox::block_at (src/common/philox.h), for the x86 generators.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// words[4 * b + w] = philox::block_at(seed, first + b).w[w] for b in [0, blocks).
void philox_words(uint64_t seed, uint64_t first, size_t blocks, uint32_t* words);

}  // namespace neomeg::dnn::x86
