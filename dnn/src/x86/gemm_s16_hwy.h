// An exact integer GEMM for the quantized (int8) kernels: 16-bit operands, products summed in
// pairs into int32 lanes (vpmaddwd and vpaddd, on AVX2 and AVX-512 alike), so every sum is the
// exact integer sum modulo 2^32. int8 and uint8-minus-zero-point values fit 16 bits exactly.
// oneDNN's int8 convolution is not used: without VNNI (jit_uni_int8:avx2, also what
// ONEDNN_MAX_CPU_ISA=AVX2 gives) it multiplies u8 x s8 pairs with vpmaddubsw, whose int16 sum
// saturates. Measured with oneDNN 2.6 on a 3x3x64 kernel of constant values: u8 255 by s8 -128
// gives -9437184 for the exact -18800640, and s8 -128 by 127 (src shifted to u8) -9437184 for the
// exact -9363456; so its results depend on the CPU, where naive's (and MegEngine's) do not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// Rows of A per micro-tile; A is packed in blocks of this many rows (s16_pack_a). Six rows by two
// vectors are 12 accumulators, beside B's two vectors and A's broadcast the most of AVX2's 16
// registers; measured 10% faster than 4 on a 3x3x512 kernel, and 8 (spilling) 10% slower.
inline constexpr size_t kS16GemmRows = 6;

// The packed size of A (m rows, k columns) in int16 elements: m and k rounded up to the row
// block and to even.
inline size_t s16_packed_a_size(size_t m, size_t k) {
    return (m + kS16GemmRows - 1) / kS16GemmRows * kS16GemmRows * ((k + 1) / 2 * 2);
}

// Packs A(i, p) = a[i * row + p * col] - zero into `out` (s16_packed_a_size elements): row blocks
// of kS16GemmRows, within which column pairs (p, p + 1) of each row lie side by side; rows and
// the column past an odd k are zero.
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

// The width of B's column strips; s16_gemm reads B rows in whole strips.
size_t s16_gemm_strip();

// C(i, j) = sum_p A(i, p) * B(p, j) for i < m, j < n, written to c[i * ldc + j] (int32, wrapping
// modulo 2^32). a is packed by s16_pack_a for these m and k; B's row p lies at b + p * ldb, with
// ldb >= n rounded up to s16_gemm_strip(), and holds k rounded up to even rows (a zero row last
// when k is odd); columns n to the strip's end are read, never written.
void s16_gemm(const int16_t* a, const int16_t* b, size_t ldb, size_t m, size_t n, size_t k,
              int32_t* c, ptrdiff_t ldc);

}  // namespace neomeg::dnn::x86
