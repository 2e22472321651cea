// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. The micro-tile is
// kS16GemmRows rows by two vectors of int32 columns: B's rows p and p + 1 are interleaved so that
// each int32 lane holds a column's pair, and ReorderWidenMulAccumulate multiplies it by the row's
// broadcast pair of A. The interleave works within 128-bit blocks, so the lanes hold the columns
// in a block-wise order, undone when the tile is stored (column_order).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/gemm_s16_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cstring>
#include <vector>

#include "src/x86/gemm_s16_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// One lane holds no pair: plain loops, for CPUs below AVX2 only.
constexpr size_t kMaxStrip = 8;
constexpr size_t R = kS16GemmRows;

size_t Strip() {
    return kMaxStrip;
}

void column_order(int32_t* order) {
    for (size_t l = 0; l < kMaxStrip; ++l)
        order[l] = static_cast<int32_t>(l);
}

// The strip's rows p as they are: packed[(p * strip + l].
void PackStrip(const int16_t* b, size_t ldb, size_t kp, int16_t* packed) {
    for (size_t p = 0; p < 2 * kp; ++p)
        for (size_t l = 0; l < kMaxStrip; ++l)
            packed[p * kMaxStrip + l] = b[p * ldb + l];
}

HWY_INLINE void Tile(const int16_t* HWY_RESTRICT a, const int16_t* HWY_RESTRICT b, size_t kp,
                     int32_t* HWY_RESTRICT tile) {
    for (size_t r = 0; r < R; ++r) {
        for (size_t l = 0; l < kMaxStrip; ++l) {
            uint32_t sum = 0;  // wraps as the vector lanes do
            for (size_t q = 0; q < kp; ++q)
                for (size_t h = 0; h < 2; ++h)
                    sum += static_cast<uint32_t>(a[(q * R + r) * 2 + h] *
                                                 b[(2 * q + h) * kMaxStrip + l]);
            tile[r * kMaxStrip + l] = static_cast<int32_t>(sum);
        }
    }
}
#else
using D32 = hn::ScalableTag<int32_t>;
using D16 = hn::Repartition<int16_t, D32>;
using V32 = hn::Vec<D32>;
using V16 = hn::Vec<D16>;

constexpr size_t kMaxStrip = 64;  // two vectors of int32 lanes on any x86 target
constexpr size_t R = kS16GemmRows;

size_t Strip() {
    return 2 * hn::Lanes(D32());
}

// The column each lane of the tile's two accumulators holds: the interleave applied to the column
// numbers themselves.
void column_order(int32_t* order) {
    const D16 d16;
    const D32 d32;
    const V16 iota = hn::Iota(d16, 0);
    const V32 low = hn::Set(d32, 0xffff);
    hn::StoreU(hn::And(hn::BitCast(d32, hn::InterleaveLower(d16, iota, iota)), low), d32, order);
    hn::StoreU(hn::And(hn::BitCast(d32, hn::InterleaveUpper(d16, iota, iota)), low), d32,
               order + hn::Lanes(d32));
}

// One strip of B, its rows interleaved in pairs: per pair q the two vectors Tile multiplies.
void PackStrip(const int16_t* b, size_t ldb, size_t kp, int16_t* packed) {
    const D16 d16;
    const size_t n16 = hn::Lanes(d16);
    for (size_t q = 0; q < kp; ++q) {
        const V16 r0 = hn::LoadU(d16, b + 2 * q * ldb);
        const V16 r1 = hn::LoadU(d16, b + (2 * q + 1) * ldb);
        hn::StoreU(hn::InterleaveLower(d16, r0, r1), d16, packed + 2 * q * n16);
        hn::StoreU(hn::InterleaveUpper(d16, r0, r1), d16, packed + (2 * q + 1) * n16);
    }
}

// One tile: R rows of packed A (a: kp pairs of R rows) by one packed strip of B, into
// tile[R][strip].
HWY_INLINE void Tile(const int16_t* HWY_RESTRICT a, const int16_t* HWY_RESTRICT b, size_t kp,
                     int32_t* HWY_RESTRICT tile) {
    const D16 d16;
    const D32 d32;
    const size_t lanes = hn::Lanes(d32), n16 = hn::Lanes(d16);
    V32 lo0[R], hi0[R], lo1[R], hi1[R];
    for (size_t r = 0; r < R; ++r)
        lo0[r] = hi0[r] = lo1[r] = hi1[r] = hn::Zero(d32);
    for (size_t q = 0; q < kp; ++q) {
        const V16 lo = hn::LoadU(d16, b + 2 * q * n16), hi = hn::LoadU(d16, b + (2 * q + 1) * n16);
        const int16_t* ap = a + q * 2 * R;
        for (size_t r = 0; r < R; ++r) {
            int32_t pair;
            std::memcpy(&pair, ap + 2 * r, sizeof(pair));
            const V16 av = hn::BitCast(d16, hn::Set(d32, pair));
            lo0[r] = hn::ReorderWidenMulAccumulate(d32, lo, av, lo0[r], lo1[r]);
            hi0[r] = hn::ReorderWidenMulAccumulate(d32, hi, av, hi0[r], hi1[r]);
        }
    }
    for (size_t r = 0; r < R; ++r) {
        hn::StoreU(hn::RearrangeToOddPlusEven(lo0[r], lo1[r]), d32, tile + r * 2 * lanes);
        hn::StoreU(hn::RearrangeToOddPlusEven(hi0[r], hi1[r]), d32, tile + r * 2 * lanes + lanes);
    }
}

#endif

// Pairs of B's rows per block of the sum: a block's packed strips (16 KiB per AVX2 strip) and
// A's row block of it (2 KiB) stay in L1 and L2 while every row block and strip pass.
constexpr size_t kBlockPairs = 256;

void Gemm(const int16_t* a, const int16_t* b, size_t ldb, size_t m, size_t n, size_t k, int32_t* c,
          ptrdiff_t ldc) {
    const size_t strip = Strip(), kp = (k + 1) / 2, strips = (n + strip - 1) / strip;
    int32_t order[kMaxStrip];
    column_order(order);
    HWY_ALIGN int32_t tile[R * kMaxStrip];
    thread_local std::vector<int16_t> packed;
    const size_t block = std::min(kp, kBlockPairs) * 2 * strip;
    if (packed.size() < strips * block)
        packed.resize(strips * block);
    // A is read once: per block of pairs, B's strips are packed, then each row block of A passes
    // over all of them; the blocks' sums add up in C (wrapping, as one int32 sum would).
    for (size_t q0 = 0; q0 < kp; q0 += kBlockPairs) {
        const size_t kc = std::min(kBlockPairs, kp - q0);
        for (size_t st = 0; st < strips; ++st)
            PackStrip(b + 2 * q0 * ldb + st * strip, ldb, kc, packed.data() + st * block);
        for (size_t i0 = 0; i0 < m; i0 += R) {
            const size_t ni = std::min(R, m - i0);
            for (size_t st = 0; st < strips; ++st) {
                Tile(a + i0 * 2 * kp + q0 * 2 * R, packed.data() + st * block, kc, tile);
                const size_t j0 = st * strip, nj = std::min(strip, n - j0);
                for (size_t r = 0; r < ni; ++r) {
                    int32_t* row =
                            c + static_cast<ptrdiff_t>(i0 + r) * ldc + static_cast<ptrdiff_t>(j0);
                    const int32_t* t = tile + r * strip;
                    for (size_t l = 0; l < strip; ++l) {
                        const auto j = static_cast<size_t>(order[l]);
                        if (j < nj)
                            row[j] = q0 ? static_cast<int32_t>(static_cast<uint32_t>(row[j]) +
                                                               static_cast<uint32_t>(t[l]))
                                        : t[l];
                    }
                }
            }
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Strip);
HWY_EXPORT(Gemm);

size_t s16_gemm_strip() {
    return HWY_DYNAMIC_DISPATCH(Strip)();
}

void s16_gemm(const int16_t* a, const int16_t* b, size_t ldb, size_t m, size_t n, size_t k,
              int32_t* c, ptrdiff_t ldc) {
    HWY_DYNAMIC_DISPATCH(Gemm)(a, b, ldb, m, n, k, c, ldc);
}

}  // namespace neomeg::dnn::x86
#endif
