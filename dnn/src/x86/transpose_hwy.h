// The inner steps of the x86 transpose (relayout.cpp's tiled copy) for 4-byte elements, turned in
// 8 x 8 blocks in AVX2/AVX-512 registers (Highway, the instruction set chosen at run time) rather
// than one element at a time: from a tile held in L1, or straight from src to dst; and 2- and
// 1-byte elements straight from src to dst.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// dst[i * dst_row + j] = tile[j * pitch + i] for j < nj, i < ni. With `stream`, whole aligned
// vectors of dst are written non-temporally (weakly ordered until stream_fence()).
void transpose_tile_u32(const uint32_t* tile, size_t pitch, size_t nj, size_t ni, uint32_t* dst,
                        ptrdiff_t dst_row, bool stream);

// dst[i * dst_row + j] = src[j * src_row + i] for j < nj, i < ni, with no buffer between: src rows
// 16 at a time (bands of 32 on AVX2: transpose_hwy.cpp), each step two 8 x 8 blocks, so that every
// dst row gets 16 elements (64 bytes, a whole line where dst is 64-byte aligned and dst_row a
// multiple of 16) in two adjacent stores. With `stream` and dst 32-byte aligned with dst_row a
// multiple of 8, those stores are non-temporal (weakly ordered until stream_fence()); otherwise
// plain. Strides may be negative.
void transpose_u32(const uint32_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint32_t* dst,
                   ptrdiff_t dst_row, bool stream);

// The src rows transpose_u32 takes together on the instruction set it runs on (16, or 32 on AVX2):
// a caller that cuts nj into pieces cuts it in multiples of this, so that no band is split.
size_t transpose_u32_band_rows();

// The same for 2-byte elements (8 x 8 blocks in 128-bit registers, 32 bytes per dst row a step),
// plain stores only.
void transpose_u16(const uint16_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint16_t* dst,
                   ptrdiff_t dst_row);

// The same for 1-byte elements (16 x 16 blocks in 128-bit registers, 16 bytes per dst row a
// step), plain stores only.
void transpose_u8(const uint8_t* src, ptrdiff_t src_row, size_t nj, size_t ni, uint8_t* dst,
                  ptrdiff_t dst_row);

}  // namespace neomeg::dnn::x86
