// The scan of TopK's bounded heap over a dense float32 line (Highway, the instruction set chosen
// at run time): most elements of a long line do not enter a heap of k small keys, so they are
// tested a vector at a time, and only an element that enters is left to the scalar heap update.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// The first position i >= begin of line[0, n) whose key rank (sort_keys.h's value_rank ^ flip) is
// below `top`, or at most `top` with `or_equal`; from where fewer than a vector's lanes remain,
// `begin` or the first position past the full vectors, which the caller tests one at a time.
size_t topk_next_entering_f32(const float* line, size_t begin, size_t n, uint32_t flip,
                              uint32_t top, bool or_equal);

}  // namespace neomeg::dnn::x86
