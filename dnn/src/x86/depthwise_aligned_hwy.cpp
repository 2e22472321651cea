// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. Only the AVX-512
// target has a kernel (valignd shifts a whole 512-bit register, which Highway 1.0 does not
// expose): it uses the raw registers of Highway's vectors.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_aligned_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <hwy/aligned_allocator.h>

#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "src/x86/depthwise_aligned_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t N = 16;
// Output vectors per tile along W and output rows per band: 4 x 4 accumulators beside 9 weights
// and 6 input vectors in the 32 registers.
constexpr size_t kVecs = 4, kRows = 4;
// The largest plane copy, in floats (256 KiB: L2).
constexpr size_t kMaxCopy = 64 * 1024;

// (hi:lo) shifted right by S lanes: lanes S..15 of lo, then 0..S-1 of hi.
template <int S>
HWY_INLINE VF Shift(VF hi, VF lo) {
    return VF{_mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(hi.raw), _mm512_castps_si512(lo.raw), S))};
}

// R output rows by V vectors from output vector j0: the taps of output column ox read the copy's
// columns ox + 15 .. ox + 17 (the copy holds X's column c at c + 16), so output vector j's taps
// are (B[j], B[j+1]) shifted by 15, B[j+1] and (B[j+1], B[j+2]) shifted by 1, B the copy's aligned
// vectors of a row; copy row i is the band's i-th input row.
template <size_t SH, size_t R, size_t V>
HWY_INLINE void Tile(const float* copy, size_t copy_row, const VF (&w)[9], float* o,
                     ptrdiff_t out_row, size_t j0, size_t ow, bool accumulate) {
    const DF d;
    VF acc[R][V];
    const size_t last = ow - (j0 + V - 1) * N;  // outputs in the tile's last vector, up to N
    const auto tail = hn::FirstN(d, last < N ? last : N);
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < V; ++j) {
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + (j0 + j) * N;
            if (!accumulate)
                acc[r][j] = hn::Zero(d);
            else if (j + 1 == V)
                acc[r][j] = hn::MaskedLoad(tail, d, p);
            else
                acc[r][j] = hn::LoadU(d, p);
        }
    // With a stride of 2 a copy row holds X's even columns, then (`half` on) its odd ones:
    // output column ox's taps are odd column ox - 1, even ox and odd ox.
    const size_t half = (copy_row / 2);
#pragma GCC unroll 8
    for (size_t i = 0; i < (R - 1) * SH + 3; ++i) {
        const float* b = copy + i * copy_row + j0 * N;
        constexpr size_t kLoads = SH == 1 ? V + 2 : V + 1;
        VF B[kLoads], O[SH == 1 ? 1 : V + 1];
#pragma GCC unroll 8
        for (size_t j = 0; j < kLoads; ++j)
            B[j] = hn::Load(d, b + j * N);
        if constexpr (SH == 2) {
#pragma GCC unroll 8
            for (size_t j = 0; j < V + 1; ++j)
                O[j] = hn::Load(d, b + half + j * N);
        }
#pragma GCC unroll 8
        for (size_t j = 0; j < V; ++j) {
            VF t0, t1, t2;
            if constexpr (SH == 1) {
                t0 = Shift<15>(B[j + 1], B[j]);
                t1 = B[j + 1];
                t2 = Shift<1>(B[j + 2], B[j + 1]);
            } else {
                t0 = Shift<15>(O[j + 1], O[j]);
                t1 = B[j + 1];
                t2 = O[j + 1];
            }
#pragma GCC unroll 8
            for (size_t r = 0; r < R; ++r) {
                if (i < r * SH || i - r * SH > 2)
                    continue;
                const size_t ky = i - r * SH;
                acc[r][j] = hn::MulAdd(w[ky * 3], t0, acc[r][j]);
                acc[r][j] = hn::MulAdd(w[ky * 3 + 1], t1, acc[r][j]);
                acc[r][j] = hn::MulAdd(w[ky * 3 + 2], t2, acc[r][j]);
            }
        }
    }
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < V; ++j) {
            float* p = o + static_cast<ptrdiff_t>(r) * out_row + (j0 + j) * N;
            if (j + 1 == V && last < N)
                hn::BlendedStore(acc[r][j], tail, d, p);
            else
                hn::StoreU(acc[r][j], d, p);
        }
}

// R output rows from band row 0 of the copy, the whole output row in tiles of up to kVecs
// vectors.
template <size_t SH, size_t R>
HWY_INLINE void Band(const float* copy, size_t copy_row, const VF (&w)[9], float* o,
                     ptrdiff_t out_row, size_t ow, bool accumulate) {
    const size_t nvec = (ow + N - 1) / N;
    size_t j = 0;
    for (; j + kVecs <= nvec; j += kVecs)
        Tile<SH, R, kVecs>(copy, copy_row, w, o, out_row, j,
                           j + kVecs == nvec ? ow : (j + kVecs) * N, accumulate);
    switch (nvec - j) {
        case 3:
            Tile<SH, R, 3>(copy, copy_row, w, o, out_row, j, ow, accumulate);
            break;
        case 2:
            Tile<SH, R, 2>(copy, copy_row, w, o, out_row, j, ow, accumulate);
            break;
        case 1:
            Tile<SH, R, 1>(copy, copy_row, w, o, out_row, j, ow, accumulate);
            break;
        default:
            break;
    }
}

template <size_t SH>
bool Correlate(const DwSource& x, const float* wt, float* out, ptrdiff_t out_row, size_t oh,
               size_t ow, bool accumulate) {
    const DF d;
    if (x.left != 1 || oh == 0 || ow == 0)
        return false;
    const size_t nvec = (ow + N - 1) / N;
    // A copy row (per stride-2 phase: even columns, then odd ones): one zero vector, X's columns
    // from lane 16 on, zeros up to the last vector a tap reads (nvec + 2 vectors in all). Copy row
    // k is X's row k - top (zero outside the plane); output row oy reads copy rows oy * SH ..
    // oy * SH + 2.
    const size_t half = (nvec + 2) * N, copy_row = SH * half, rows = (oh - 1) * SH + 3;
    if (rows * copy_row > kMaxCopy)
        return false;
    thread_local hwy::AlignedFreeUniquePtr<float[]> buf;
    if (!buf)
        buf = hwy::AllocateAligned<float>(kMaxCopy);
    float* copy = buf.get();
    // X's columns the taps read: up to ow (stride 1), 2 * ow - 1 (stride 2).
    const size_t in_w = std::min(x.w, SH * ow + 2 - SH);
    auto lanes = [&](size_t c0) { return hn::FirstN(d, c0 >= in_w ? 0 : std::min(N, in_w - c0)); };
    // Rows are copied as the bands reach them, so that the loads from memory interleave with
    // the arithmetic of the band before (a copy of the whole plane first measured 10-30% slower
    // at batch 32, where the planes stream from memory).
    size_t copied = 0;
    auto copy_rows = [&](size_t upto) {
        for (; copied < upto; ++copied) {
            float* c = copy + copied * copy_row;
            const ptrdiff_t y = static_cast<ptrdiff_t>(copied) - x.top;
            const bool inside = y >= 0 && y < static_cast<ptrdiff_t>(x.h);
            const float* src = inside ? x.data + y * x.row : nullptr;
            for (size_t p = 0; p < SH; ++p)
                hn::Store(hn::Zero(d), d, c + p * half);
            for (size_t v = 0; v < nvec + 1; ++v) {
                const size_t c0 = v * N * SH;
                if constexpr (SH == 1) {
                    VF val = hn::Zero(d);
                    if (inside && c0 < in_w)
                        val = c0 + N <= in_w ? hn::LoadU(d, src + c0)
                                             : hn::MaskedLoad(lanes(c0), d, src + c0);
                    hn::Store(val, d, c + N + v * N);
                } else {
                    VF lo = hn::Zero(d), hi = hn::Zero(d);
                    if (inside && c0 < in_w) {
                        lo = c0 + N <= in_w ? hn::LoadU(d, src + c0)
                                            : hn::MaskedLoad(lanes(c0), d, src + c0);
                        hi = c0 + 2 * N <= in_w ? hn::LoadU(d, src + c0 + N)
                                                : hn::MaskedLoad(lanes(c0 + N), d, src + c0 + N);
                    }
                    hn::Store(hn::ConcatEven(d, hi, lo), d, c + N + v * N);
                    hn::Store(hn::ConcatOdd(d, hi, lo), d, c + half + N + v * N);
                }
            }
        }
    };
    VF w[9];
    for (size_t i = 0; i < 9; ++i)
        w[i] = hn::Set(d, wt[i]);
    size_t oy = 0;
    for (; oy + kRows <= oh; oy += kRows) {
        copy_rows((oy + kRows - 1) * SH + 3);
        Band<SH, kRows>(copy + oy * SH * copy_row, copy_row, w,
                        out + static_cast<ptrdiff_t>(oy) * out_row, out_row, ow, accumulate);
    }
    for (; oy < oh; ++oy) {
        copy_rows(oy * SH + 3);
        Band<SH, 1>(copy + oy * SH * copy_row, copy_row, w,
                    out + static_cast<ptrdiff_t>(oy) * out_row, out_row, ow, accumulate);
    }
    return true;
}

bool AlignedCorrelate3x3(size_t stride, const DwSource& x, const float* wt, float* out,
                         ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    if (stride == 1)
        return Correlate<1>(x, wt, out, out_row, oh, ow, accumulate);
    if (stride == 2)
        return Correlate<2>(x, wt, out, out_row, oh, ow, accumulate);
    return false;
}
#else
bool AlignedCorrelate3x3(size_t, const DwSource&, const float*, float*, ptrdiff_t, size_t, size_t,
                         bool) {
    return false;
}
#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(AlignedCorrelate3x3);

bool dw_aligned_correlate3x3(size_t stride, const DwSource& x, const float* w, float* out,
                             ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate) {
    return HWY_DYNAMIC_DISPATCH(AlignedCorrelate3x3)(stride, x, w, out, out_row, oh, ow,
                                                     accumulate);
}

}  // namespace neomeg::dnn::x86
#endif
