// The inner step of the x86 transpose (relayout.cpp's tiled copy) for 4-byte elements: a tile held
// in L1 is turned in 8 x 8 blocks in AVX2/AVX-512 registers (Highway, the instruction set chosen at
// run time) rather than one element at a time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// dst[i * dst_row + j] = tile[j * pitch + i] for j < nj, i < ni. With `stream`, whole aligned
// vectors of dst are written non-temporally (weakly ordered until stream_fence()).
void transpose_tile_u32(const uint32_t* tile, size_t pitch, size_t nj, size_t ni, uint32_t* dst,
                        ptrdiff_t dst_row, bool stream);

}  // namespace neomeg::dnn::x86
