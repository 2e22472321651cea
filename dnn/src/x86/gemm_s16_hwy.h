// An exact integer GEMM for the quantized (int8) kernels: 16-bit operands, products summed in
// pairs into int32 lanes (vpmaddwd and vpaddd, on AVX2 and AVX-512 alike), so every sum is the
// exact integer sum modulo 2^32. int8 and uint8-minus-zero-point values fit 16 bits exactly.
// oneDNN's int8 convolution is not used: without VNNI (jit_uni_int8:avx2, also what
// ONEDNN_MAX_CPU_ISA=AVX2 gives) it multiplies u8 x s8 pairs with vpmaddubsw, whose int16 sum
// saturates. Measured with oneDNN 2.6 on a 3x3x64 kernel of constant values: u8 255 by s8 -128
// gives -9437184 for the exact -18800640, and s8 -128 by 127 (src shifted to u8) -9437184 for the
// exact -9363456; so its results depend on the CPU, where naive's (and MegEngine's) do not.
//
// The operands are packed for the micro-kernel (kS16GemmRows rows of A by one strip of
// kS16Strip columns of B, summed over pairs of the K index):
// - A (m x k): s16_pack_a, once per filter (the convolution keeps it in the weight cache);
// - B (k x n): a panel per block of pairs of rows, built by s16_pack_pairs one pair of B's rows at
//   a time, from any rows the caller finds B's in (im2col rows, a zero-padded copy of the image,
//   or the image itself), with the zero point subtracted there;
// then s16_gemm_panel multiplies one block of the sum into C.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// Rows of A per micro-tile; A is packed in blocks of this many rows (s16_pack_a). Six rows by two
// 8-lane vectors are 12 accumulators, beside B's two vectors and A's broadcast the most of AVX2's
// 16 registers.
inline constexpr size_t kS16GemmRows = 6;
// Columns of B per packed strip, on every target: the micro-tile's two vectors of 8 int32 lanes.
// AVX-512 runs the same 256-bit tiles (one layout and one code path for every CPU).
inline constexpr size_t kS16Strip = 16;

// The packed size of A (m rows, k columns) in int16 elements: m and k rounded up to the row
// block and to even.
inline size_t s16_packed_a_size(size_t m, size_t k) {
    return (m + kS16GemmRows - 1) / kS16GemmRows * kS16GemmRows * ((k + 1) / 2 * 2);
}

// Packs A(i, p) = a[i * row + p * col] - zero into `out` (s16_packed_a_size elements): row blocks
// of kS16GemmRows, within which column pairs (p, p + 1) of each row lie side by side; rows and
// the column past an odd k are zero (so B's row past an odd k may hold anything).
template <class T>
void s16_pack_a(const T* a, ptrdiff_t row, ptrdiff_t col, size_t m, size_t k, int32_t zero,
                int16_t* out) {
    const size_t kp = (k + 1) / 2;
    for (size_t ib = 0; ib < m; ib += kS16GemmRows) {
        for (size_t q = 0; q < kp; ++q) {
            for (size_t r = 0; r < kS16GemmRows; ++r) {
                for (size_t h = 0; h < 2; ++h) {
                    size_t i = ib + r, p = 2 * q + h;
                    *out++ = i < m && p < k
                                     ? static_cast<int16_t>(a[static_cast<ptrdiff_t>(i) * row +
                                                              static_cast<ptrdiff_t>(p) * col] -
                                                            zero)
                                     : int16_t{0};
                }
            }
        }
    }
}

// The packed size of a panel of B (kc pairs of rows, n columns) in int16 elements.
inline size_t s16_panel_size(size_t kc, size_t n) {
    return (n + kS16Strip - 1) / kS16Strip * kc * 2 * kS16Strip;
}

// Pair q of a panel of kc pairs: rows r0 and r1 of B (columns 0 .. n, minus `zero`) interleaved
// into `out` = panel + q * 2 * kS16Strip; strip s lies at out + s * kc * 2 * kS16Strip. Columns n
// to the last strip's end are zero; r0 and r1 are read at columns below n only.
void s16_pack_pairs(const int8_t* r0, const int8_t* r1, int16_t zero, size_t n, size_t kc,
                    int16_t* out);
void s16_pack_pairs(const uint8_t* r0, const uint8_t* r1, int16_t zero, size_t n, size_t kc,
                    int16_t* out);
void s16_pack_pairs(const int16_t* r0, const int16_t* r1, size_t n, size_t kc, int16_t* out);

// C(i, j) (+)= sum over pairs q0 .. q0 + kc of A(i, 2q..2q+1) * B(2q..2q+1, j), i < m, j < n,
// at c[i * ldc + j] (int32, wrapping modulo 2^32); with `accumulate` added to C, else stored.
// a is s16_pack_a's packing of A with kp pairs per row (its row 0 at a), panel the packed B of
// this block of kc pairs.
void s16_gemm_panel(const int16_t* a, size_t kp, size_t q0, size_t kc, const int16_t* panel,
                    size_t m, size_t n, int32_t* c, ptrdiff_t ldc, bool accumulate);

// dst = max(sum + bias, lo) per row i < rows of sums (at sums + i * lds) into dst + i * ldd, the
// add saturated to int32 as naive's double sum is (bias: bias[i * bias_step], or none). The sums
// are columns p0 .. p0 + nc of rows of `wide` columns of which the first `width` are kept: column
// y * wide + x goes to dst[y * width + x] for x < width (wide == width: a plain copy).
void s16_finish(const int32_t* sums, ptrdiff_t lds, int32_t* dst, ptrdiff_t ldd, size_t rows,
                size_t p0, size_t nc, size_t wide, size_t width, const int32_t* bias,
                ptrdiff_t bias_step, int32_t lo);

// The block of the sum s16_gemm_panel's callers pack B for: kp pairs split into equal blocks of
// at most a budget of pairs that keeps a strip of the panel (and A's rows of it) in cache.
size_t s16_block_pairs(size_t kp);
// Rows of A per pass over a panel's strips, so that those rows of one block stay in L2.
size_t s16_block_rows(size_t kc);

// C = A * B for a plain B of int16 rows: row p at b + p * ldb (n columns read), k rows (the row
// past an odd k is not read). a is packed by s16_pack_a for these m and k.
void s16_gemm(const int16_t* a, const int16_t* b, size_t ldb, size_t m, size_t n, size_t k,
              int32_t* c, ptrdiff_t ldc);

}  // namespace neomeg::dnn::x86
