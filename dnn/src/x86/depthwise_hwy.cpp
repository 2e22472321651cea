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

#include <algorithm>
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

// The first n lanes at p, the others 0, reading nothing past them: AVX2 and AVX-512 mask their
// loads and stores without touching the masked-off lanes' memory; other targets go through a
// buffer.
HWY_INLINE VF LoadFirst(DF d, const float* p, size_t n) {
#if HWY_TARGET <= HWY_AVX2
    return hn::MaskedLoad(hn::FirstN(d, n), d, p);
#else
    alignas(64) float tmp[kTail] = {};
    std::memcpy(tmp, p, n * sizeof(float));
    return hn::Load(d, tmp);
#endif
}

HWY_INLINE void StoreFirst(VF v, DF d, float* p, size_t n) {
#if HWY_TARGET <= HWY_AVX2
    hn::BlendedStore(v, hn::FirstN(d, n), d, p);
#else
    alignas(64) float tmp[kTail];
    hn::Store(v, d, tmp);
    std::memcpy(p, tmp, n * sizeof(float));
#endif
}

// V vectors of one output row from o, the last one holding `last` outputs (a whole vector or the
// row's partial end; P's slack covers the reads past it): independent accumulators hide the
// multiply-add latency of the taps' chain.
template <int V>
HWY_INLINE void Strip(DF d, const float* base, const TapOffsets& off, size_t taps, const float* w,
                      float* o, bool accumulate, size_t last) {
    const size_t N = hn::Lanes(d);
    auto load = [&](int i) {
        if (!accumulate)
            return hn::Zero(d);
        return i == V - 1 && last < N ? LoadFirst(d, o + i * N, last) : hn::LoadU(d, o + i * N);
    };
    auto store = [&](VF v, int i) {
        if (i == V - 1 && last < N)
            StoreFirst(v, d, o + i * N, last);
        else
            hn::StoreU(v, d, o + i * N);
    };
    VF a0 = load(0), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    if constexpr (V > 1)
        a1 = load(1);
    if constexpr (V > 2)
        a2 = load(2);
    if constexpr (V > 3)
        a3 = load(3);
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
    store(a0, 0);
    if constexpr (V > 1)
        store(a1, 1);
    if constexpr (V > 2)
        store(a2, 2);
    if constexpr (V > 3)
        store(a3, 3);
}

void DwCorrelate(const DwPadded& p, const DwTaps& t, const float* w, float* out, ptrdiff_t out_row,
                 size_t oh, size_t ow, bool accumulate) {
    const DF d;
    const size_t N = hn::Lanes(d), taps = t.kh * t.kw;
    const TapOffsets off(p, t);
    for (size_t oy = 0; oy < oh; ++oy) {
        const float* base = p.data + oy * t.sh * p.row;
        float* o = out + static_cast<ptrdiff_t>(oy) * out_row;
        // Groups of up to four vectors, the last group ending with the row's partial vector.
        for (size_t ox = 0; ox < ow; ox += 4 * N) {
            size_t left = ow - ox, nv = std::min<size_t>(4, (left + N - 1) / N);
            size_t last = std::min(N, left - (nv - 1) * N);
            switch (nv) {
                case 4:
                    Strip<4>(d, base + ox, off, taps, w, o + ox, accumulate, last);
                    break;
                case 3:
                    Strip<3>(d, base + ox, off, taps, w, o + ox, accumulate, last);
                    break;
                case 2:
                    Strip<2>(d, base + ox, off, taps, w, o + ox, accumulate, last);
                    break;
                default:
                    Strip<1>(d, base + ox, off, taps, w, o + ox, accumulate, last);
                    break;
            }
        }
    }
}

void DwScatter(const DwPadded& p, const DwTaps& t, const float* w, const float* diff,
               ptrdiff_t diff_row, size_t oh, size_t ow) {
    const DF d;
    const size_t N = hn::Lanes(d), taps = t.kh * t.kw;
    const TapOffsets off(p, t);
    // Writable by contract: the caller owns P's buffer.
    float* data = const_cast<float*>(p.data);
    for (size_t oy = 0; oy < oh; ++oy) {
        const float* dr = diff + static_cast<ptrdiff_t>(oy) * diff_row;
        float* base = data + oy * t.sh * p.row;
        for (size_t k = 0; k < taps; ++k) {
            const auto wv = hn::Set(d, w[k]);
            float* o = base + off[k];
            size_t ox = 0;
            for (; ox + N <= ow; ox += N)
                hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, dr + ox), hn::LoadU(d, o + ox)), d, o + ox);
            if (ox < ow) {
                // The lanes past the row must leave P alone: they are other positions' sums.
                size_t n = ow - ox;
                StoreFirst(hn::MulAdd(wv, LoadFirst(d, dr + ox, n), hn::LoadU(d, o + ox)), d,
                           o + ox, n);
            }
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
        auto sv = hn::IfThenElseZero(hn::FirstN(d, ow - ox), hn::LoadU(d, s + ox));
        a1 = hn::MulAdd(LoadFirst(d, dr + ox, ow - ox), sv, a1);
    }
}

// All K taps of a small kernel at once: each vector of diff is loaded once for its K products,
// and the K accumulators are K independent chains.
template <size_t K>
void FilterGradTaps(DF d, const DwPadded& p, const TapOffsets& off, size_t step, const float* diff,
                    ptrdiff_t diff_row, size_t oh, size_t ow, double* g) {
    const size_t N = hn::Lanes(d);
    size_t o[K];
    VF acc[K];
    for (size_t k = 0; k < K; ++k) {
        o[k] = off[k];
        acc[k] = hn::Zero(d);
    }
    for (size_t oy = 0; oy < oh; ++oy) {
        const float* dr = diff + static_cast<ptrdiff_t>(oy) * diff_row;
        const float* base = p.data + oy * step;
        size_t ox = 0;
        for (; ox + N <= ow; ox += N) {
            const VF dv = hn::LoadU(d, dr + ox);
            for (size_t k = 0; k < K; ++k)
                acc[k] = hn::MulAdd(dv, hn::LoadU(d, base + o[k] + ox), acc[k]);
        }
        if (ox < ow) {
            // Lanes past the row masked off: P there holds the next row's values.
            const auto m = hn::FirstN(d, ow - ox);
            const VF dv = LoadFirst(d, dr + ox, ow - ox);
            for (size_t k = 0; k < K; ++k)
                acc[k] = hn::MulAdd(dv, hn::IfThenElseZero(m, hn::LoadU(d, base + o[k] + ox)),
                                    acc[k]);
        }
    }
    for (size_t k = 0; k < K; ++k)
        g[k] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc[k])));
}

// Larger kernels a tap at a time, over two rows with two accumulators each.
void FilterGradEachTap(DF d, const DwPadded& p, const TapOffsets& off, size_t step, size_t taps,
                       const float* diff, ptrdiff_t diff_row, size_t oh, size_t ow, double* g) {
    for (size_t k = 0; k < taps; ++k) {
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

void DwFilterGrad(const DwPadded& p, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                  size_t oh, size_t ow, double* g) {
    const DF d;
    const TapOffsets off(p, t);
    const size_t step = t.sh * p.row, taps = t.kh * t.kw;
    switch (taps) {
#define NM_TAPS(K) \
    case K:        \
        return FilterGradTaps<K>(d, p, off, step, diff, diff_row, oh, ow, g);
        NM_TAPS(1)
        NM_TAPS(2)
        NM_TAPS(3)
        NM_TAPS(4)
        NM_TAPS(5)
        NM_TAPS(6)
        NM_TAPS(7)
        NM_TAPS(8)
        NM_TAPS(9)
#undef NM_TAPS
        default:
            return FilterGradEachTap(d, p, off, step, taps, diff, diff_row, oh, ow, g);
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(DwCorrelate);
HWY_EXPORT(DwFilterGrad);
HWY_EXPORT(DwScatter);

void dw_scatter(const DwPadded& p, const DwTaps& t, const float* w, const float* diff,
                ptrdiff_t diff_row, size_t oh, size_t ow) {
    HWY_DYNAMIC_DISPATCH(DwScatter)(p, t, w, diff, diff_row, oh, ow);
}

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
