// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cstring>
#include <vector>

#include "src/x86/depthwise_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Room for one vector of the widest target, for a row's last, partial vector.
constexpr size_t kTail = 64;

// Each tap's offset in P from the start of an output row's first run (row oy * sh, column 0).
class TapOffsets {
public:
    TapOffsets(const DwPadded& p, const DwTaps& t) {
        size_t n = t.kh * t.kw;
        if (n > kInline) {
            m_heap.resize(n);
            m_p = m_heap.data();
        }
        for (size_t ky = 0; ky < t.kh; ++ky)
            for (size_t kx = 0; kx < t.kw; ++kx) {
                size_t c = kx * t.dw;
                m_p[ky * t.kw + kx] = (c % p.sw) * p.phase + ky * t.dh * p.row + c / p.sw;
            }
    }
    TapOffsets(const TapOffsets&) = delete;
    TapOffsets& operator=(const TapOffsets&) = delete;
    size_t operator[](size_t i) const { return m_p[i]; }

private:
    static constexpr size_t kInline = 64;
    size_t m_inline[kInline];
    std::vector<size_t> m_heap;
    size_t* m_p = m_inline;
};

// V vectors of one output row from column ox: independent accumulators hide the multiply-add
// latency of the taps' chain.
template <int V>
HWY_INLINE void Strip(DF d, const float* base, const TapOffsets& off, size_t taps, const float* w,
                      float* o, bool accumulate) {
    const size_t N = hn::Lanes(d);
    auto a0 = accumulate ? hn::LoadU(d, o) : hn::Zero(d);
    auto a1 = V > 1 && accumulate ? hn::LoadU(d, o + N) : hn::Zero(d);
    auto a2 = V > 2 && accumulate ? hn::LoadU(d, o + 2 * N) : hn::Zero(d);
    auto a3 = V > 3 && accumulate ? hn::LoadU(d, o + 3 * N) : hn::Zero(d);
    for (size_t k = 0; k < taps; ++k) {
        const float* s = base + off[k];
        const auto wv = hn::Set(d, w[k]);
        a0 = hn::MulAdd(wv, hn::LoadU(d, s), a0);
        if constexpr (V > 1)
            a1 = hn::MulAdd(wv, hn::LoadU(d, s + N), a1);
        if constexpr (V > 2)
            a2 = hn::MulAdd(wv, hn::LoadU(d, s + 2 * N), a2);
        if constexpr (V > 3)
            a3 = hn::MulAdd(wv, hn::LoadU(d, s + 3 * N), a3);
    }
    hn::StoreU(a0, d, o);
    if constexpr (V > 1)
        hn::StoreU(a1, d, o + N);
    if constexpr (V > 2)
        hn::StoreU(a2, d, o + 2 * N);
    if constexpr (V > 3)
        hn::StoreU(a3, d, o + 3 * N);
}

void DwCorrelate(const DwPadded& p, const DwTaps& t, const float* w, float* out, ptrdiff_t out_row,
                 size_t oh, size_t ow, bool accumulate) {
    const DF d;
    const size_t N = hn::Lanes(d), taps = t.kh * t.kw;
    const TapOffsets off(p, t);
    for (size_t oy = 0; oy < oh; ++oy) {
        const float* base = p.data + oy * t.sh * p.row;
        float* o = out + static_cast<ptrdiff_t>(oy) * out_row;
        size_t ox = 0;
        for (; ox + 4 * N <= ow; ox += 4 * N)
            Strip<4>(d, base + ox, off, taps, w, o + ox, accumulate);
        switch ((ow - ox) / N) {
            case 3:
                Strip<3>(d, base + ox, off, taps, w, o + ox, accumulate);
                break;
            case 2:
                Strip<2>(d, base + ox, off, taps, w, o + ox, accumulate);
                break;
            case 1:
                Strip<1>(d, base + ox, off, taps, w, o + ox, accumulate);
                break;
            default:
                break;
        }
        ox += (ow - ox) / N * N;
        if (ox < ow) {
            // The last, partial vector goes through a buffer; P's slack covers its reads.
            alignas(64) float tmp[kTail] = {};
            size_t n = ow - ox;
            if (accumulate)
                std::memcpy(tmp, o + ox, n * sizeof(float));
            Strip<1>(d, base + ox, off, taps, w, tmp, accumulate);
            std::memcpy(o + ox, tmp, n * sizeof(float));
        }
    }
}

// One row of diff against a tap's run of P: full vectors into a0 and a1 in turn, the partial
// last one (lanes past the row masked off: P there holds the next row's values) into a1.
HWY_INLINE void DotRow(DF d, const float* dr, const float* s, size_t ow, VF& a0, VF& a1) {
    const size_t N = hn::Lanes(d);
    size_t ox = 0;
    for (; ox + 2 * N <= ow; ox += 2 * N) {
        a0 = hn::MulAdd(hn::LoadU(d, dr + ox), hn::LoadU(d, s + ox), a0);
        a1 = hn::MulAdd(hn::LoadU(d, dr + ox + N), hn::LoadU(d, s + ox + N), a1);
    }
    if (ox + N <= ow) {
        a0 = hn::MulAdd(hn::LoadU(d, dr + ox), hn::LoadU(d, s + ox), a0);
        ox += N;
    }
    if (ox < ow) {
        alignas(64) float tmp[kTail] = {};
        std::memcpy(tmp, dr + ox, (ow - ox) * sizeof(float));
        auto sv = hn::IfThenElseZero(hn::FirstN(d, ow - ox), hn::LoadU(d, s + ox));
        a1 = hn::MulAdd(hn::LoadU(d, tmp), sv, a1);
    }
}

void DwFilterGrad(const DwPadded& p, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                  size_t oh, size_t ow, double* g) {
    const DF d;
    const TapOffsets off(p, t);
    const size_t step = t.sh * p.row;
    for (size_t k = 0; k < t.kh * t.kw; ++k) {
        // Two rows at a time, two accumulators each: four independent chains.
        auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
        size_t oy = 0;
        for (; oy + 2 <= oh; oy += 2) {
            const float* dr = diff + static_cast<ptrdiff_t>(oy) * diff_row;
            const float* s = p.data + oy * step + off[k];
            DotRow(d, dr, s, ow, a0, a1);
            DotRow(d, dr + diff_row, s + step, ow, a2, a3);
        }
        if (oy < oh)
            DotRow(d, diff + static_cast<ptrdiff_t>(oy) * diff_row, p.data + oy * step + off[k], ow,
                   a0, a1);
        auto sum = hn::Add(hn::Add(a0, a1), hn::Add(a2, a3));
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, sum)));
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(DwCorrelate);
HWY_EXPORT(DwFilterGrad);

void dw_correlate(const DwPadded& p, const DwTaps& t, const float* w, float* out, ptrdiff_t out_row,
                  size_t oh, size_t ow, bool accumulate) {
    HWY_DYNAMIC_DISPATCH(DwCorrelate)(p, t, w, out, out_row, oh, ow, accumulate);
}

void dw_filter_grad(const DwPadded& p, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                    size_t oh, size_t ow, double* g) {
    HWY_DYNAMIC_DISPATCH(DwFilterGrad)(p, t, diff, diff_row, oh, ow, g);
}

}  // namespace neomeg::dnn::x86
#endif
