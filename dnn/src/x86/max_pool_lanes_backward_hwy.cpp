// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/max_pool_lanes_backward_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "src/x86/max_pool_lanes_backward_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using MF = hn::Mask<DF>;

// The first n floats from p, the other lanes `fill`; no memory past them is touched (masked loads
// on AVX2 and AVX-512, a buffer elsewhere).
HWY_INLINE VF LoadFirst(DF d, const float* p, size_t n, float fill) {
#if HWY_TARGET <= HWY_AVX2
    const MF m = hn::FirstN(d, n);
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, fill));
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        tmp[i] = i < n ? p[i] : fill;
    return hn::Load(d, tmp);
#endif
}

HWY_INLINE void StoreFirst(VF v, DF d, float* p, size_t n) {
#if HWY_TARGET <= HWY_AVX2
    hn::BlendedStore(v, hn::FirstN(d, n), d, p);
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(v, d, tmp);
    std::memcpy(p, tmp, n * sizeof(float));
#endif
}

// The valid taps [first, end) of output o's window along one axis, and its first input index
// (negative where it starts in padding).
struct Span {
    size_t first, end;
    ptrdiff_t start;
};

HWY_INLINE Span SpanOf(const PoolDims& g, size_t axis, size_t o) {
    const ptrdiff_t start =
            static_cast<ptrdiff_t>(o * g.s[axis]) - static_cast<ptrdiff_t>(g.p[axis]);
    const auto in = static_cast<ptrdiff_t>(g.in[axis]), k = static_cast<ptrdiff_t>(g.k[axis]);
    return {static_cast<size_t>(std::clamp<ptrdiff_t>(-start, 0, k)),
            static_cast<size_t>(std::clamp<ptrdiff_t>(in - start, 0, k)), start};
}

// An input index's place in the windows along one axis: the output whose window holds it and the
// tap it is there.
struct Cover {
    uint32_t o, k;
};

// For each input index along `axis`, the windows holding it in ascending order: list[start[i]]
// to list[start[i + 1]].
void CoversOf(const PoolDims& g, size_t axis, std::vector<uint32_t>& start,
              std::vector<Cover>& list) {
    const auto s = static_cast<ptrdiff_t>(g.s[axis]), k = static_cast<ptrdiff_t>(g.k[axis]),
               p = static_cast<ptrdiff_t>(g.p[axis]), out = static_cast<ptrdiff_t>(g.out[axis]);
    start.resize(g.in[axis] + 1);
    list.clear();
    for (size_t i = 0; i < g.in[axis]; ++i) {
        start[i] = static_cast<uint32_t>(list.size());
        // o * s - p <= i < o * s - p + k
        const ptrdiff_t at = static_cast<ptrdiff_t>(i) + p;
        const ptrdiff_t lo = std::max<ptrdiff_t>(0, at - k + s > 0 ? (at - k + s) / s : 0);
        const ptrdiff_t hi = std::min<ptrdiff_t>(out - 1, at / s);
        for (ptrdiff_t o = lo; o <= hi; ++o)
            if (at - o * s < k)
                list.push_back({static_cast<uint32_t>(o), static_cast<uint32_t>(at - o * s)});
    }
    start[g.in[axis]] = static_cast<uint32_t>(list.size());
}

// One window's winner over lanes [0, n) of p + off[t] (t < nt, naive's order), as the index
// id[t] of the tap that wins. EXACT: naive's rule (a NaN wins, the first of them); otherwise the
// first maximum by `>`, the lanes that saw a NaN added to `nan` (the row is then redone).
template <bool EXACT, bool FULL>
HWY_INLINE void Winner(DF d, const float* p, const ptrdiff_t* off, const int32_t* id, size_t nt,
                       size_t n, int32_t* w, MF& nan) {
    const DI di;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    auto load = [&](const float* q) { return FULL ? hn::LoadU(d, q) : LoadFirst(d, q, n, kLowest); };
    VF best = load(p + off[0]);
    VI idx = hn::Set(di, id[0]);
    if (!EXACT)
        nan = hn::Or(nan, hn::IsNaN(best));
    for (size_t t = 1; t < nt; ++t) {
        const VF v = load(p + off[t]);
        MF take;
        if constexpr (EXACT) {
            take = hn::AndNot(hn::IsNaN(best), hn::Or(hn::IsNaN(v), hn::Gt(v, best)));
        } else {
            take = hn::Gt(v, best);
            nan = hn::Or(nan, hn::IsNaN(v));
        }
        best = hn::IfThenElse(take, v, best);
        idx = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, id[t]), idx);
    }
    hn::Store(idx, di, w);
}

// The winners of output row oy (every position, lanes padded to lp) into w; false where the fast
// pass saw a NaN and EXACT must run.
template <bool EXACT>
bool WinnersRow(DF d, const float* src, const ptrdiff_t* ss, size_t lanes, size_t lp,
                const PoolDims& g, size_t oy, int32_t* w) {
    const size_t N = hn::Lanes(d), kw = g.k[2];
    const Span sy = SpanOf(g, 1, oy);
    ptrdiff_t off[256];
    int32_t id[256];
    size_t nt = 0, fx = ~size_t(0), ex = 0;
    MF nan = hn::FirstN(d, 0);
    const float* row = src + sy.start * ss[1];
    for (size_t ox = 0; ox < g.out[2]; ++ox) {
        const Span sx = SpanOf(g, 2, ox);
        if (sx.first != fx || sx.end != ex) {
            fx = sx.first;
            ex = sx.end;
            nt = 0;
            for (size_t ky = sy.first; ky < sy.end; ++ky)
                for (size_t kx = sx.first; kx < sx.end; ++kx) {
                    off[nt] = static_cast<ptrdiff_t>(ky) * ss[1] + static_cast<ptrdiff_t>(kx) * ss[2];
                    id[nt++] = static_cast<int32_t>(ky * kw + kx);
                }
        }
        const float* p = row + sx.start * ss[2];
        int32_t* wo = w + ox * lp;
        size_t l = 0;
        for (; l + N <= lanes; l += N)
            Winner<EXACT, true>(d, p + l, off, id, nt, N, wo + l, nan);
        if (l < lanes)
            Winner<EXACT, false>(d, p + l, off, id, nt, lanes - l, wo + l, nan);
    }
    return EXACT || hn::AllFalse(d, nan);
}

// Each thread's buffers, kept between calls.
struct Scratch {
    std::vector<int32_t> win;
    std::vector<uint32_t> ystart, xstart;
    std::vector<Cover> ylist, xlist;
};

Scratch& ThreadScratch() {
    thread_local Scratch s;
    return s;
}

// grad's value at lanes [l, l + N) of position x of an input row: diff of each window holding it
// (rows r < nr: diff rows dr[r], winner rows wr[r], tap row ky[r]; columns from cx) whose winner
// is this tap, in naive's order, from +0.
template <bool FULL>
HWY_INLINE VF Gathered(DF d, const float* const* dr, const int32_t* const* wr, const int32_t* kyw,
                       size_t nr, const Cover* cx, size_t nc, ptrdiff_t ys2, size_t lp, size_t l,
                       size_t n) {
    const DI di;
    VF acc = hn::Zero(d);
    for (size_t r = 0; r < nr; ++r)
        for (size_t c = 0; c < nc; ++c) {
            const VI w = hn::Load(di, wr[r] + cx[c].o * lp + l);
            const MF m = hn::RebindMask(d, hn::Eq(w, hn::Set(di, kyw[r] + int32_t(cx[c].k))));
            const float* q = dr[r] + static_cast<ptrdiff_t>(cx[c].o) * ys2 + l;
            const VF v = FULL ? hn::LoadU(d, q) : LoadFirst(d, q, n, 0.f);
            acc = hn::Add(acc, hn::IfThenElseZero(m, v));
        }
    return acc;
}

void MaxPoolLanesBackward(const float* src, const ptrdiff_t* ss, const float* diff,
                          const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                          const PoolDims& g) {
    const DF d;
    const size_t N = hn::Lanes(d);
    const size_t lp = (lanes + N - 1) / N * N;
    const size_t ow = g.out[2];
    // A ring of output rows' winners: an input row needs at most ceil(k / s) of them.
    const size_t ring = (g.k[1] + g.s[1] - 1) / g.s[1] + 1;
    Scratch& sc = ThreadScratch();
    sc.win.resize(ring * ow * lp + N);
    // Aligned rows of winners (Load, Store).
    int32_t* win = sc.win.data();
    while (reinterpret_cast<uintptr_t>(win) % (N * sizeof(int32_t)) != 0)
        ++win;
    CoversOf(g, 1, sc.ystart, sc.ylist);
    CoversOf(g, 2, sc.xstart, sc.xlist);
    constexpr size_t kMaxRows = 64;
    const float* dr[kMaxRows];
    const int32_t* wr[kMaxRows];
    int32_t kyw[kMaxRows];
    for (size_t z = 0; z < g.in[0]; ++z) {
        const float* s = src + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dy = diff + static_cast<ptrdiff_t>(z) * ys[0];
        float* gr = grad + static_cast<ptrdiff_t>(z) * gs[0];
        size_t next = 0;  // the next output row whose winners are due
        for (size_t y = 0; y < g.in[1]; ++y) {
            const Cover* cy = sc.ylist.data() + sc.ystart[y];
            const size_t nr = sc.ystart[y + 1] - sc.ystart[y];
            for (; nr > 0 && next <= cy[nr - 1].o; ++next) {
                int32_t* w = win + (next % ring) * ow * lp;
                if (!WinnersRow<false>(d, s, ss, lanes, lp, g, next, w))
                    WinnersRow<true>(d, s, ss, lanes, lp, g, next, w);
            }
            for (size_t r = 0; r < nr; ++r) {
                dr[r] = dy + static_cast<ptrdiff_t>(cy[r].o) * ys[1];
                wr[r] = win + (cy[r].o % ring) * ow * lp;
                kyw[r] = static_cast<int32_t>(cy[r].k * g.k[2]);
            }
            float* grow = gr + static_cast<ptrdiff_t>(y) * gs[1];
            for (size_t x = 0; x < g.in[2]; ++x) {
                const Cover* cx = sc.xlist.data() + sc.xstart[x];
                const size_t nc = sc.xstart[x + 1] - sc.xstart[x];
                float* o = grow + static_cast<ptrdiff_t>(x) * gs[2];
                size_t l = 0;
                for (; l + N <= lanes; l += N)
                    hn::StoreU(Gathered<true>(d, dr, wr, kyw, nr, cx, nc, ys[2], lp, l, N), d,
                               o + l);
                if (l < lanes)
                    StoreFirst(Gathered<false>(d, dr, wr, kyw, nr, cx, nc, ys[2], lp, l,
                                               lanes - l),
                               d, o + l, lanes - l);
            }
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(MaxPoolLanesBackward);

void max_pool_lanes_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                             const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                             const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanesBackward)(src, ss, diff, ys, grad, gs, lanes, g);
}

}  // namespace neomeg::dnn::x86
#endif
