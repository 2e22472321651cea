// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. The micro-tile is
// kS16GemmRows rows by one strip of kS16Strip columns (two vectors of 8 int32 lanes): a packed
// strip holds, per pair of B's rows, the 16 columns' pairs side by side, so each int32 lane holds
// one column's pair and ReorderWidenMulAccumulate multiplies it by the row's broadcast pair of A.
// Strips are packed in column order, so tiles store straight into C.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/gemm_s16_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/x86/gemm_s16_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t R = kS16GemmRows;
constexpr size_t S = kS16Strip;

// The columns of a partial last strip, one at a time.
template <class T>
void PackTail(const T* r0, const T* r1, int16_t zero, size_t cols, int16_t* out) {
    for (size_t l = 0; l < S; ++l) {
        out[2 * l] = l < cols ? static_cast<int16_t>(r0[l] - zero) : int16_t{0};
        out[2 * l + 1] = l < cols ? static_cast<int16_t>(r1[l] - zero) : int16_t{0};
    }
}

#if HWY_TARGET <= HWY_AVX2
// 256-bit vectors on AVX2 and AVX-512 alike: one strip layout everywhere.
using D32 = hn::FixedTag<int32_t, 8>;
using D16 = hn::FixedTag<int16_t, 16>;
using V32 = hn::Vec<D32>;
using V16 = hn::Vec<D16>;

HWY_INLINE V16 Load16(const int8_t* p, V16 zero) {
    return hn::Sub(hn::PromoteTo(D16(), hn::LoadU(hn::Rebind<int8_t, D16>(), p)), zero);
}
HWY_INLINE V16 Load16(const uint8_t* p, V16 zero) {
    return hn::Sub(hn::PromoteTo(D16(), hn::LoadU(hn::Rebind<uint8_t, D16>(), p)), zero);
}
HWY_INLINE V16 Load16(const int16_t* p, V16 zero) {
    return hn::Sub(hn::LoadU(D16(), p), zero);
}

template <class T>
void PackPairs(const T* r0, const T* r1, int16_t zero, size_t n, size_t kc, int16_t* out) {
    const D16 d16;
    const V16 z = hn::Set(d16, zero);
    const size_t stride = kc * 2 * S, full = n / S;
    for (size_t s = 0; s < full; ++s, out += stride) {
        const V16 a = Load16(r0 + s * S, z), b = Load16(r1 + s * S, z);
        // Interleaving works within 128-bit blocks: lo holds columns 0-3 and 8-11, hi 4-7 and
        // 12-15; their block halves, recombined, give the columns in order.
        const V16 lo = hn::InterleaveLower(d16, a, b), hi = hn::InterleaveUpper(d16, a, b);
        hn::StoreU(hn::ConcatLowerLower(d16, hi, lo), d16, out);
        hn::StoreU(hn::ConcatUpperUpper(d16, hi, lo), d16, out + S);
    }
    if (n % S)
        PackTail(r0 + full * S, r1 + full * S, zero, n % S, out);
}

// Row r's broadcast pair of A.
HWY_INLINE V16 PairOfA(const int16_t* a, size_t r) {
    int32_t pair;
    std::memcpy(&pair, a + 2 * r, sizeof(pair));
    return hn::BitCast(D16(), hn::Set(D32(), pair));
}

// acc += the pairs' products. On x86, Highway's ReorderWidenMulAccumulate of int16 is vpmaddwd +
// vpaddd into sum0 and leaves sum1 alone (RearrangeToOddPlusEven returns sum0), so one sum1
// serves every accumulator.
HWY_INLINE void Mac(V16 b, V16 a, V32& acc, V32& odd) {
    acc = hn::ReorderWidenMulAccumulate(D32(), b, a, acc, odd);
}

// One accumulator into C (whole tiles) or into the tile buffer (tiles C cuts).
HWY_INLINE void Put(V32 v, V32 odd, int32_t* c, int32_t* buffer, bool whole) {
    const D32 d32;
    v = hn::RearrangeToOddPlusEven(v, odd);
    if (whole)
        hn::StoreU(v, d32, c);
    else
        hn::Store(v, d32, buffer);
}

// The part of a tile inside C (rows x cols) from the tile buffer of rows of `width` lanes.
HWY_INLINE void PutPart(const int32_t* buffer, size_t width, int32_t* c, ptrdiff_t ldc, size_t rows,
                        size_t cols, bool accumulate) {
    for (size_t r = 0; r < rows; ++r) {
        int32_t* p = c + static_cast<ptrdiff_t>(r) * ldc;
        const int32_t* t = buffer + r * width;
        for (size_t l = 0; l < cols; ++l)
            p[l] = accumulate ? static_cast<int32_t>(static_cast<uint32_t>(p[l]) +
                                                     static_cast<uint32_t>(t[l]))
                              : t[l];
    }
}

// One tile: R rows of packed A (a: kc pairs of R rows) by one packed strip of B, into C's rows
// (rows, cols: the part of the tile inside C). The accumulators are named one by one, and a whole
// tile that accumulates starts from C rather than adding C at the end: otherwise GCC kept a copy
// of each accumulator on the stack.
static_assert(R == 6, "Tile names six rows of accumulators");
HWY_INLINE void Tile(const int16_t* HWY_RESTRICT a, const int16_t* HWY_RESTRICT b, size_t kc,
                     int32_t* HWY_RESTRICT c, ptrdiff_t ldc, size_t rows, size_t cols,
                     bool accumulate) {
    V32 odd = hn::Zero(D32());
    V32 c00 = odd, c01 = odd, c10 = odd, c11 = odd, c20 = odd, c21 = odd;
    V32 c30 = odd, c31 = odd, c40 = odd, c41 = odd, c50 = odd, c51 = odd;
    const bool whole = rows == R && cols == S;
    const ptrdiff_t h = S / 2;
    if (whole && accumulate) {
        const D32 d32;
        c00 = hn::LoadU(d32, c);
        c01 = hn::LoadU(d32, c + h);
        c10 = hn::LoadU(d32, c + ldc);
        c11 = hn::LoadU(d32, c + ldc + h);
        c20 = hn::LoadU(d32, c + 2 * ldc);
        c21 = hn::LoadU(d32, c + 2 * ldc + h);
        c30 = hn::LoadU(d32, c + 3 * ldc);
        c31 = hn::LoadU(d32, c + 3 * ldc + h);
        c40 = hn::LoadU(d32, c + 4 * ldc);
        c41 = hn::LoadU(d32, c + 4 * ldc + h);
        c50 = hn::LoadU(d32, c + 5 * ldc);
        c51 = hn::LoadU(d32, c + 5 * ldc + h);
    }
    for (size_t q = 0; q < kc; ++q, a += 2 * R, b += 2 * S) {
        const V16 b0 = hn::LoadU(D16(), b), b1 = hn::LoadU(D16(), b + S);
        V16 av = PairOfA(a, 0);
        Mac(b0, av, c00, odd);
        Mac(b1, av, c01, odd);
        av = PairOfA(a, 1);
        Mac(b0, av, c10, odd);
        Mac(b1, av, c11, odd);
        av = PairOfA(a, 2);
        Mac(b0, av, c20, odd);
        Mac(b1, av, c21, odd);
        av = PairOfA(a, 3);
        Mac(b0, av, c30, odd);
        Mac(b1, av, c31, odd);
        av = PairOfA(a, 4);
        Mac(b0, av, c40, odd);
        Mac(b1, av, c41, odd);
        av = PairOfA(a, 5);
        Mac(b0, av, c50, odd);
        Mac(b1, av, c51, odd);
    }
    HWY_ALIGN int32_t buffer[R * S];
    Put(c00, odd, c, buffer, whole);
    Put(c01, odd, c + h, buffer + h, whole);
    Put(c10, odd, c + ldc, buffer + S, whole);
    Put(c11, odd, c + ldc + h, buffer + S + h, whole);
    Put(c20, odd, c + 2 * ldc, buffer + 2 * S, whole);
    Put(c21, odd, c + 2 * ldc + h, buffer + 2 * S + h, whole);
    Put(c30, odd, c + 3 * ldc, buffer + 3 * S, whole);
    Put(c31, odd, c + 3 * ldc + h, buffer + 3 * S + h, whole);
    Put(c40, odd, c + 4 * ldc, buffer + 4 * S, whole);
    Put(c41, odd, c + 4 * ldc + h, buffer + 4 * S + h, whole);
    Put(c50, odd, c + 5 * ldc, buffer + 5 * S, whole);
    Put(c51, odd, c + 5 * ldc + h, buffer + 5 * S + h, whole);
    if (!whole)
        PutPart(buffer, S, c, ldc, rows, cols, accumulate);
}

// A strip whose columns fit one vector (a 7x7 image's 49th column): half the work.
HWY_INLINE void HalfTile(const int16_t* HWY_RESTRICT a, const int16_t* HWY_RESTRICT b, size_t kc,
                         int32_t* HWY_RESTRICT c, ptrdiff_t ldc, size_t rows, size_t cols,
                         bool accumulate) {
    V32 odd = hn::Zero(D32());
    V32 c0 = odd, c1 = odd, c2 = odd, c3 = odd, c4 = odd, c5 = odd;
    for (size_t q = 0; q < kc; ++q, a += 2 * R, b += 2 * S) {
        const V16 b0 = hn::LoadU(D16(), b);
        Mac(b0, PairOfA(a, 0), c0, odd);
        Mac(b0, PairOfA(a, 1), c1, odd);
        Mac(b0, PairOfA(a, 2), c2, odd);
        Mac(b0, PairOfA(a, 3), c3, odd);
        Mac(b0, PairOfA(a, 4), c4, odd);
        Mac(b0, PairOfA(a, 5), c5, odd);
    }
    HWY_ALIGN int32_t buffer[R * S / 2];
    constexpr size_t h = S / 2;
    Put(c0, odd, c, buffer, false);
    Put(c1, odd, c, buffer + h, false);
    Put(c2, odd, c, buffer + 2 * h, false);
    Put(c3, odd, c, buffer + 3 * h, false);
    Put(c4, odd, c, buffer + 4 * h, false);
    Put(c5, odd, c, buffer + 5 * h, false);
    PutPart(buffer, h, c, ldc, rows, cols, accumulate);
}

HWY_INLINE void StripTile(const int16_t* a, const int16_t* b, size_t kc, int32_t* c, ptrdiff_t ldc,
                          size_t rows, size_t cols, bool accumulate) {
    if (cols <= S / 2)
        HalfTile(a, b, kc, c, ldc, rows, cols, accumulate);
    else
        Tile(a, b, kc, c, ldc, rows, cols, accumulate);
}
// sum + bias saturated to int32 (as naive's double sum is), then at least lo: a wrapped sum whose
// sign differs from both addends' overflowed.
HWY_INLINE V32 BiasAct(V32 a, V32 bias, V32 lo) {
    const D32 d32;
    const V32 zero = hn::Zero(d32), s = hn::Add(a, bias);
    const auto overflow = hn::Lt(hn::And(hn::Xor(a, s), hn::Xor(bias, s)), zero);
    const V32 sat =
            hn::IfThenElse(hn::Lt(a, zero), hn::Set(d32, INT32_MIN), hn::Set(d32, INT32_MAX));
    return hn::Max(hn::IfThenElse(overflow, sat, s), lo);
}

HWY_INLINE void FinishRun(const int32_t* from, int32_t* to, size_t len, int32_t bias, int32_t lo) {
    const D32 d32;
    const V32 bv = hn::Set(d32, bias), lv = hn::Set(d32, lo);
    size_t j = 0;
    for (; j + 8 <= len; j += 8)
        hn::StoreU(BiasAct(hn::LoadU(d32, from + j), bv, lv), d32, to + j);
    if (j < len) {
        HWY_ALIGN int32_t buffer[8] = {};
        std::copy(from + j, from + len, buffer);
        hn::Store(BiasAct(hn::Load(d32, buffer), bv, lv), d32, buffer);
        std::copy(buffer, buffer + (len - j), to + j);
    }
}
#else
// Below AVX2 (no CPU NeoMeg targets has less): plain loops on the same layouts.
HWY_INLINE void FinishRun(const int32_t* from, int32_t* to, size_t len, int32_t bias, int32_t lo) {
    for (size_t j = 0; j < len; ++j) {
        const int32_t a = from[j];
        const auto s = static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(bias));
        const int32_t sat = a < 0 ? INT32_MIN : INT32_MAX;
        to[j] = std::max(((a ^ s) & (bias ^ s)) < 0 ? sat : s, lo);
    }
}
template <class T>
void PackPairs(const T* r0, const T* r1, int16_t zero, size_t n, size_t kc, int16_t* out) {
    for (size_t j = 0; j < n; j += S, out += kc * 2 * S)
        PackTail(r0 + j, r1 + j, zero, std::min(S, n - j), out);
}

void StripTile(const int16_t* a, const int16_t* b, size_t kc, int32_t* c, ptrdiff_t ldc,
               size_t rows, size_t cols, bool accumulate) {
    for (size_t r = 0; r < rows; ++r) {
        for (size_t l = 0; l < cols; ++l) {
            uint32_t sum = 0;  // wraps as the vector lanes do
            for (size_t q = 0; q < kc; ++q)
                for (size_t h = 0; h < 2; ++h)
                    sum += static_cast<uint32_t>(a[(q * R + r) * 2 + h] * b[(q * S + l) * 2 + h]);
            int32_t* p = c + static_cast<ptrdiff_t>(r) * ldc + static_cast<ptrdiff_t>(l);
            *p = static_cast<int32_t>(accumulate ? sum + static_cast<uint32_t>(*p) : sum);
        }
    }
}
#endif

void PackPairsI8(const int8_t* r0, const int8_t* r1, int16_t zero, size_t n, size_t kc,
                 int16_t* out) {
    PackPairs(r0, r1, zero, n, kc, out);
}
void PackPairsU8(const uint8_t* r0, const uint8_t* r1, int16_t zero, size_t n, size_t kc,
                 int16_t* out) {
    PackPairs(r0, r1, zero, n, kc, out);
}
void PackPairsI16(const int16_t* r0, const int16_t* r1, size_t n, size_t kc, int16_t* out) {
    PackPairs(r0, r1, int16_t{0}, n, kc, out);
}

void Finish(const int32_t* sums, ptrdiff_t lds, int32_t* dst, ptrdiff_t ldd, size_t rows, size_t p0,
            size_t nc, size_t wide, size_t width, const int32_t* bias, ptrdiff_t bias_step,
            int32_t lo) {
    for (size_t i = 0; i < rows; ++i) {
        const int32_t bv = bias ? bias[static_cast<ptrdiff_t>(i) * bias_step] : 0;
        const int32_t* from = sums + static_cast<ptrdiff_t>(i) * lds;
        int32_t* to = dst + static_cast<ptrdiff_t>(i) * ldd;
        for (size_t j = p0; j < p0 + nc;) {
            const size_t y = j / wide, x = j % wide, end = std::min(p0 + nc, (y + 1) * wide);
            if (x < width)
                FinishRun(from + (j - p0), to + y * width + x, std::min(end, y * wide + width) - j,
                          bv, lo);
            j = end;
        }
    }
}

// Per block of rows of A (s16_block_rows: they stay in L2), each strip of the panel (in L1)
// passes under all of the block's row tiles.
void GemmPanel(const int16_t* a, size_t kp, size_t q0, size_t kc, const int16_t* panel, size_t m,
               size_t n, int32_t* c, ptrdiff_t ldc, bool accumulate) {
    const size_t strips = (n + S - 1) / S, mc = s16_block_rows(kc);
    for (size_t i1 = 0; i1 < m; i1 += mc) {
        const size_t i2 = std::min(m, i1 + mc);
        for (size_t s = 0; s < strips; ++s) {
            const int16_t* b = panel + s * kc * 2 * S;
            const size_t j0 = s * S, nj = std::min(S, n - j0);
            for (size_t i0 = i1; i0 < i2; i0 += R)
                StripTile(a + i0 * 2 * kp + q0 * 2 * R, b, kc,
                          c + static_cast<ptrdiff_t>(i0) * ldc + static_cast<ptrdiff_t>(j0), ldc,
                          std::min(R, m - i0), nj, accumulate);
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(PackPairsI8);
HWY_EXPORT(PackPairsU8);
HWY_EXPORT(PackPairsI16);
HWY_EXPORT(GemmPanel);
HWY_EXPORT(Finish);

// A block's strip of B is kc * 64 bytes: 16 KiB at 256 pairs, half of Zen 3's and Intel's L1d.
constexpr size_t kBlockPairs = 512;
// Packed A's rows of one block that stay in L2 (512 KiB to 2 MiB per core) beside the panel.
constexpr size_t kBlockABytes = size_t(192) << 10;

size_t s16_block_pairs(size_t kp) {
    const size_t blocks = std::max<size_t>((kp + kBlockPairs - 1) / kBlockPairs, 1);
    return std::max<size_t>((kp + blocks - 1) / blocks, 1);
}

size_t s16_block_rows(size_t kc) {
    return std::max<size_t>(kBlockABytes / (kc * 4) / kS16GemmRows, 1) * kS16GemmRows;
}

void s16_pack_pairs(const int8_t* r0, const int8_t* r1, int16_t zero, size_t n, size_t kc,
                    int16_t* out) {
    HWY_DYNAMIC_DISPATCH(PackPairsI8)(r0, r1, zero, n, kc, out);
}
void s16_pack_pairs(const uint8_t* r0, const uint8_t* r1, int16_t zero, size_t n, size_t kc,
                    int16_t* out) {
    HWY_DYNAMIC_DISPATCH(PackPairsU8)(r0, r1, zero, n, kc, out);
}
void s16_pack_pairs(const int16_t* r0, const int16_t* r1, size_t n, size_t kc, int16_t* out) {
    HWY_DYNAMIC_DISPATCH(PackPairsI16)(r0, r1, n, kc, out);
}

void s16_gemm_panel(const int16_t* a, size_t kp, size_t q0, size_t kc, const int16_t* panel,
                    size_t m, size_t n, int32_t* c, ptrdiff_t ldc, bool accumulate) {
    HWY_DYNAMIC_DISPATCH(GemmPanel)(a, kp, q0, kc, panel, m, n, c, ldc, accumulate);
}

void s16_finish(const int32_t* sums, ptrdiff_t lds, int32_t* dst, ptrdiff_t ldd, size_t rows,
                size_t p0, size_t nc, size_t wide, size_t width, const int32_t* bias,
                ptrdiff_t bias_step, int32_t lo) {
    HWY_DYNAMIC_DISPATCH(Finish)
    (sums, lds, dst, ldd, rows, p0, nc, wide, width, bias, bias_step, lo);
}

void s16_gemm(const int16_t* a, const int16_t* b, size_t ldb, size_t m, size_t n, size_t k,
              int32_t* c, ptrdiff_t ldc) {
    const size_t kp = (k + 1) / 2, block = s16_block_pairs(kp);
    thread_local std::vector<int16_t> panel;
    if (panel.size() < s16_panel_size(block, n))
        panel.resize(s16_panel_size(block, n));
    for (size_t q0 = 0; q0 < kp; q0 += block) {
        const size_t kc = std::min(block, kp - q0);
        for (size_t q = 0; q < kc; ++q) {
            const int16_t* r0 = b + 2 * (q0 + q) * ldb;
            // A's column past an odd k is zero: any row will do.
            const int16_t* r1 = 2 * (q0 + q) + 1 < k ? r0 + ldb : r0;
            s16_pack_pairs(r0, r1, n, kc, panel.data() + q * 2 * kS16Strip);
        }
        s16_gemm_panel(a, kp, q0, kc, panel.data(), m, n, c, ldc, q0 > 0);
    }
}

}  // namespace neomeg::dnn::x86
#endif
