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
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
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

// One window's winner over lanes [0, n) of p + off[t] (t < nt, naive's order), as the tap's
// number t. EXACT: naive's rule (a NaN wins, the first of them); otherwise the first maximum by
// `>`, the lanes that saw a NaN added to `nan` (the row is then redone).
template <size_t NT, bool EXACT, bool FULL>
HWY_INLINE void Winner(DF d, const float* p, const ptrdiff_t* off, size_t nt_runtime, size_t n,
                       int32_t* w, MF& nan) {
    const DI di;
    const size_t nt = NT ? NT : nt_runtime;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    auto load = [&](const float* q) {
        return FULL ? hn::LoadU(d, q) : LoadFirst(d, q, n, kLowest);
    };
    VF best = load(p + off[0]);
    VI idx = hn::Zero(di);
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
        idx = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, static_cast<int32_t>(t)), idx);
    }
    hn::Store(idx, di, w);
}

// dy's lanes added to the taps' accumulators (acc + aoff[t]) where tap t won (w), in order.
template <size_t NT>
HWY_INLINE void Scatter(DF d, VF dy, const int32_t* w, float* acc, const ptrdiff_t* aoff,
                        size_t nt_runtime) {
    const DI di;
    const size_t nt = NT ? NT : nt_runtime;
    const VI idx = hn::Load(di, w);
    for (size_t t = 0; t < nt; ++t) {
        const MF m = hn::RebindMask(d, hn::Eq(idx, hn::Set(di, static_cast<int32_t>(t))));
        float* a = acc + aoff[t];
        hn::Store(hn::Add(hn::Load(d, a), hn::IfThenElseZero(m, dy)), d, a);
    }
}

// A window's taps: their offsets in src and in the accumulator rows, relative to its first one.
struct Taps {
    size_t nt = 0;
    ptrdiff_t off[kMaxPoolLanesBackwardTaps], aoff[kMaxPoolLanesBackwardTaps];
};

// The taps of output (oy, ox)'s window, sy and sx its spans; `row` the accumulator rows' stride
// and `ring` their count (input row y at (y % ring) * row).
void TapsOf(const ptrdiff_t* ss, const Span& sy, const Span& sx, size_t lp,
            size_t row, size_t ring, Taps& t) {
    t.nt = 0;
    const size_t y0 = static_cast<size_t>(sy.start + static_cast<ptrdiff_t>(sy.first));
    for (size_t ky = sy.first; ky < sy.end; ++ky)
        for (size_t kx = sx.first; kx < sx.end; ++kx) {
            t.off[t.nt] = static_cast<ptrdiff_t>(ky - sy.first) * ss[1] +
                          static_cast<ptrdiff_t>(kx - sx.first) * ss[2];
            t.aoff[t.nt++] = static_cast<ptrdiff_t>(((y0 + ky - sy.first) % ring) * row +
                                                    (kx - sx.first) * lp);
        }
}

// Each thread's buffers, kept between calls.
struct Scratch {
    std::vector<int32_t> win;
    std::vector<float> acc, hv;
    std::vector<int32_t> hk;
    std::vector<char> ok;
};

Scratch& ThreadScratch() {
    thread_local Scratch s;
    return s;
}

template <class T>
T* AlignedIn(std::vector<T>& v, size_t n, size_t align) {
    v.resize(n + align / sizeof(T));
    auto* p = v.data();
    while (reinterpret_cast<uintptr_t>(p) % align != 0)
        ++p;
    return p;
}

// The winners of output row oy into w (position ox's lanes at ox * lp), then its gradients
// added to the accumulator rows. A row whose taps held a NaN has its winners found again by
// naive's rule.
// Columns [x0, x1) of an input row's gradient from its accumulator row `a`, left zero for the row
// that takes the slot next (nullptr: no window holds the row, +0).
HWY_INLINE void WriteRow(DF d, float* a, float* out, ptrdiff_t gs2, size_t x0, size_t x1,
                         size_t lanes, size_t lp) {
    const size_t N = hn::Lanes(d);
    const VF zero = hn::Zero(d);
    for (size_t x = x0; x < x1; ++x) {
        float* o = out + static_cast<ptrdiff_t>(x) * gs2;
        size_t l = 0;
        for (; l + N <= lanes; l += N) {
            hn::StoreU(a ? hn::Load(d, a + x * lp + l) : zero, d, o + l);
            if (a)
                hn::Store(zero, d, a + x * lp + l);
        }
        if (l < lanes) {
            StoreFirst(a ? hn::Load(d, a + x * lp + l) : zero, d, o + l, lanes - l);
            if (a)
                hn::Store(zero, d, a + x * lp + l);
        }
    }
}

// The input rows [first, end) an output row finishes, in grad's plane (gs1, gs2 its strides);
// those from acc_end on lie past the window (no window holds them: +0).
struct Out {
    float* grad;
    ptrdiff_t gs1, gs2;
    size_t first, end, acc_end;
};

// Input row `row`'s maximum over each output column's window (the first by `>`) into hv and its
// column among the window's valid ones into hk (position ox's lanes at ox * lp); false where a
// NaN was read. Rows are read whole, one after another: one stream through memory, which the
// hardware's prefetch follows (a window's rows read together are streams a row long).
static const ptrdiff_t kPFD = getenv("MPB_PFD") ? atoi(getenv("MPB_PFD")) : 0;
template <size_t KW>
bool RowMaxima(DF d, const float* row, ptrdiff_t ss2, size_t lanes, size_t lp, const PoolDims& g,
               float* hv, int32_t* hk) {
    const DI di;
    const size_t N = hn::Lanes(d);
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    MF nan = hn::FirstN(d, 0);
    for (size_t ox = 0; ox < g.out[2]; ++ox) {
        const Span sx = SpanOf(g, 2, ox);
        const size_t nx = KW && sx.end - sx.first == KW ? KW : sx.end - sx.first;
        const float* p = row + (sx.start + static_cast<ptrdiff_t>(sx.first)) * ss2;
        if (kPFD)
            for (size_t c = 0; c < g.s[2]; ++c)
                for (size_t l = 0; l < lanes; l += 16)
                    __builtin_prefetch(p + kPFD + static_cast<ptrdiff_t>(c) * ss2 +
                                       static_cast<ptrdiff_t>(l));
        for (size_t l = 0; l < lanes; l += N) {
            const size_t n = std::min(N, lanes - l);
            auto load = [&](size_t c) {
                const float* q = p + static_cast<ptrdiff_t>(c) * ss2 + l;
                return n == N ? hn::LoadU(d, q) : LoadFirst(d, q, n, kLowest);
            };
            VF best = load(0);
            VI k = hn::Zero(di);
            nan = hn::Or(nan, hn::IsNaN(best));
            for (size_t c = 1; c < nx; ++c) {
                const VF v = load(c);
                const MF take = hn::Gt(v, best);
                nan = hn::Or(nan, hn::IsNaN(v));
                best = hn::IfThenElse(take, v, best);
                k = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, static_cast<int32_t>(c)),
                                   k);
            }
            hn::Store(best, d, hv + ox * lp + l);
            hn::Store(k, di, hk + ox * lp + l);
        }
    }
    return hn::AllFalse(d, nan);
}

// Row maxima of the input rows a window spans, each computed once (rows of 3x3/2 windows serve
// two output rows, of 3x3/1 three): input row y's in slot y % ring.
struct RowCache {
    float* hv;
    int32_t* hk;
    bool* ok;       // the slot's row held no NaN
    size_t next;    // the next input row to compute
    size_t stride;  // a slot's size
};

// The winners of output row oy into w (position ox's lanes at ox * lp) from the row maxima, or
// where its rows held a NaN one window at a time by naive's rule; then its gradients added to
// the accumulator rows.
template <size_t NT>
void OutputRow(DF d, const float* src, const ptrdiff_t* ss, const float* dyrow, ptrdiff_t ys2,
               size_t lanes, size_t lp, const PoolDims& g, size_t oy, size_t row, size_t ring,
               int32_t* w, float* acc, RowCache& rc, const Out& out) {
    const DI di;
    const size_t N = hn::Lanes(d);
    const Span sy = SpanOf(g, 1, oy);
    const float* srow = src + (sy.start + static_cast<ptrdiff_t>(sy.first)) * ss[1];
    const auto y0 = static_cast<size_t>(sy.start + static_cast<ptrdiff_t>(sy.first));
    const size_t nr = sy.end - sy.first;
    Taps taps;
    size_t fx = ~size_t(0), ex = 0;
    auto taps_of = [&](const Span& sx) {
        if (sx.first != fx || sx.end != ex) {
            fx = sx.first;
            ex = sx.end;
            TapsOf(ss, sy, sx, lp, row, ring, taps);
        }
    };
    constexpr size_t KW = NT == 4 ? 2 : NT == 9 ? 3 : 0;
    bool ok = true;
    for (rc.next = std::max(rc.next, y0); rc.next < y0 + nr; ++rc.next) {
        const size_t slot = rc.next % ring;
        rc.ok[slot] = RowMaxima<KW>(d, src + static_cast<ptrdiff_t>(rc.next) * ss[1], ss[2], lanes,
                                    lp, g, rc.hv + slot * rc.stride, rc.hk + slot * rc.stride);
    }
    const float* hv[kMaxPoolLanesBackwardTaps];
    const int32_t* hk[kMaxPoolLanesBackwardTaps];
    for (size_t r = 0; r < nr; ++r) {
        const size_t slot = (y0 + r) % ring;
        ok = ok && rc.ok[slot];
        hv[r] = rc.hv + slot * rc.stride;
        hk[r] = rc.hk + slot * rc.stride;
    }
    if (ok) {
        // The rows' maxima in order, the first by `>`: naive's row-major first maximum; the tap
        // numbered as TapsOf numbers it (row by row over the valid columns).
        for (size_t ox = 0; ox < g.out[2]; ++ox) {
            const Span sx = SpanOf(g, 2, ox);
            const auto nx = static_cast<int32_t>(sx.end - sx.first);
            for (size_t l = 0; l < lanes; l += N) {
                const size_t at = ox * lp + l;
                VF best = hn::Load(d, hv[0] + at);
                VI idx = hn::Load(di, hk[0] + at);
                for (size_t r = 1; r < nr; ++r) {
                    const VF v = hn::Load(d, hv[r] + at);
                    const MF take = hn::Gt(v, best);
                    best = hn::IfThenElse(take, v, best);
                    idx = hn::IfThenElse(
                            hn::RebindMask(di, take),
                            hn::Add(hn::Load(di, hk[r] + at), hn::Set(di, static_cast<int32_t>(r) * nx)),
                            idx);
                }
                hn::Store(idx, di, w + at);
            }
        }
    } else {
        MF nan = hn::FirstN(d, 0);
        for (size_t ox = 0; ox < g.out[2]; ++ox) {
            const Span sx = SpanOf(g, 2, ox);
            taps_of(sx);
            const float* p = srow + (sx.start + static_cast<ptrdiff_t>(sx.first)) * ss[2];
            int32_t* wo = w + ox * lp;
            size_t l = 0;
            for (; l + N <= lanes; l += N)
                Winner<0, true, true>(d, p + l, taps.off, taps.nt, N, wo + l, nan);
            if (l < lanes)
                Winner<0, true, false>(d, p + l, taps.off, taps.nt, lanes - l, wo + l, nan);
        }
    }
    // The rows this one finishes: their accumulators (nullptr past the window: +0) and grad.
    // (At most a window's rows plus a stride's: the plan keeps both within kMax...Taps.)
    float* done_acc[2 * kMaxPoolLanesBackwardTaps];
    float* done_grad[2 * kMaxPoolLanesBackwardTaps];
    const size_t nd = out.end - out.first;
    for (size_t i = 0; i < nd; ++i) {
        const size_t y = out.first + i;
        done_acc[i] = y < out.acc_end ? acc + (y % ring) * row : nullptr;
        done_grad[i] = out.grad + static_cast<ptrdiff_t>(y) * out.gs1;
    }
    fx = ~size_t(0);
    size_t xw = 0;  // the columns of out's rows before xw are in grad
    for (size_t ox = 0; ox < g.out[2]; ++ox) {
        const Span sx = SpanOf(g, 2, ox);
        taps_of(sx);
        const size_t nt = taps.nt;
        const bool whole = NT && nt == NT;
        float* a = acc + (sx.start + static_cast<ptrdiff_t>(sx.first)) * static_cast<ptrdiff_t>(lp);
        const float* q = dyrow + static_cast<ptrdiff_t>(ox) * ys2;
        const int32_t* wo = w + ox * lp;
        size_t l = 0;
        for (; l + N <= lanes; l += N) {
            const VF dy = hn::LoadU(d, q + l);
            if (whole)
                Scatter<NT>(d, dy, wo + l, a + l, taps.aoff, nt);
            else
                Scatter<0>(d, dy, wo + l, a + l, taps.aoff, nt);
        }
        if (l < lanes)
            Scatter<0>(d, LoadFirst(d, q + l, lanes - l, 0.f), wo + l, a + l, taps.aoff, nt);
        // The finished rows' columns that no later window of this row reaches, written while
        // the row runs (a burst of stores at its end would wait on their misses).
        const ptrdiff_t next = static_cast<ptrdiff_t>((ox + 1) * g.s[2]) -
                               static_cast<ptrdiff_t>(g.p[2]);
        const size_t xc = ox + 1 == g.out[2] ? g.in[2]
                                             : static_cast<size_t>(std::clamp<ptrdiff_t>(
                                                       next, 0, static_cast<ptrdiff_t>(g.in[2])));
        for (size_t i = 0; i < nd; ++i)
            WriteRow(d, done_acc[i], done_grad[i], out.gs2, xw, xc, lanes, lp);
        xw = xc;
    }
}


template <size_t NT>
void LanesBackward(DF d, const float* src, const ptrdiff_t* ss, const float* diff,
                   const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                   const PoolDims& g) {
    const size_t N = hn::Lanes(d);
    const size_t lp = (lanes + N - 1) / N * N;
    // Accumulator rows of the input rows the current output row's window spans.
    const size_t ring = g.k[1] + 1, row = g.in[2] * lp;
    Scratch& sc = ThreadScratch();
    int32_t* win = AlignedIn(sc.win, g.out[2] * lp, HWY_MAX_BYTES);
    float* acc = AlignedIn(sc.acc, ring * row, HWY_MAX_BYTES);
    RowCache rc{AlignedIn(sc.hv, ring * g.out[2] * lp, HWY_MAX_BYTES),
                AlignedIn(sc.hk, ring * g.out[2] * lp, HWY_MAX_BYTES), nullptr, 0,
                g.out[2] * lp};
    sc.ok.resize(ring);
    rc.ok = reinterpret_cast<bool*>(sc.ok.data());
    for (size_t z = 0; z < g.in[0]; ++z) {
        const float* s = src + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dy = diff + static_cast<ptrdiff_t>(z) * ys[0];
        float* gr = grad + static_cast<ptrdiff_t>(z) * gs[0];
        // Each output row's window adds to accumulator rows (zero until then, zeroed again as
        // they are written), and writes the rows it finishes.
        std::fill_n(acc, ring * row, 0.f);
        rc.next = 0;
        size_t written = 0;
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const Span sy = SpanOf(g, 1, oy);
            // The rows before the next window's are done after this one.
            const ptrdiff_t next = static_cast<ptrdiff_t>((oy + 1) * g.s[1]) -
                                   static_cast<ptrdiff_t>(g.p[1]);
            const size_t done = oy + 1 == g.out[1]
                                        ? g.in[1]
                                        : static_cast<size_t>(std::clamp<ptrdiff_t>(
                                                  next, 0, static_cast<ptrdiff_t>(g.in[1])));
            const Out o{gr, gs[1], gs[2], written, done,
                        static_cast<size_t>(sy.start + static_cast<ptrdiff_t>(sy.end))};
            OutputRow<NT>(d, s, ss, dy + static_cast<ptrdiff_t>(oy) * ys[1], ys[2], lanes, lp, g,
                          oy, row, ring, win, acc, rc, o);
            written = std::max(written, done);
        }
    }
}

// Winner() with the winners in a vector.
template <size_t NT, bool EXACT, bool FULL>
HWY_INLINE VI WinnerVec(DF d, const float* p, const ptrdiff_t* off, size_t nt_runtime, size_t n,
                        MF& nan) {
    const DI di;
    const size_t nt = NT ? NT : nt_runtime;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    auto load = [&](const float* q) {
        return FULL ? hn::LoadU(d, q) : LoadFirst(d, q, n, kLowest);
    };
    VF best = load(p + off[0]);
    VI idx = hn::Zero(di);
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
        idx = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, static_cast<int32_t>(t)), idx);
    }
    return idx;
}

// +0 at positions [x0, x1) of a grad row.
HWY_INLINE void ZeroPositions(DF d, float* row, ptrdiff_t gs2, size_t x0, size_t x1,
                              size_t lanes) {
    const size_t N = hn::Lanes(d);
    for (size_t x = x0; x < x1; ++x) {
        float* o = row + static_cast<ptrdiff_t>(x) * gs2;
        size_t l = 0;
        for (; l + N <= lanes; l += N)
            hn::StoreU(hn::Zero(d), d, o + l);
        if (l < lanes)
            StoreFirst(hn::Zero(d), d, o + l, lanes - l);
    }
}

// Windows that tile the plane (stride == window, no padding: no element in two windows): each
// window's gradient straight into grad, dy at its winner and +0 at its other taps (the rows and
// columns past the last window +0), as the tiled loop on planes does; a window vector whose taps
// held a NaN takes naive's rule.
template <size_t NT>
void TiledLanes(DF d, const float* src, const ptrdiff_t* ss, const float* diff,
                const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                const PoolDims& g) {
    const DI di;
    const size_t N = hn::Lanes(d), kh = g.k[1], kw = g.k[2], nt = kh * kw;
    ptrdiff_t off[kMaxPoolLanesBackwardTaps], goff[kMaxPoolLanesBackwardTaps];
    for (size_t ky = 0; ky < kh; ++ky)
        for (size_t kx = 0; kx < kw; ++kx) {
            off[ky * kw + kx] = static_cast<ptrdiff_t>(ky) * ss[1] + static_cast<ptrdiff_t>(kx) * ss[2];
            goff[ky * kw + kx] = static_cast<ptrdiff_t>(ky) * gs[1] + static_cast<ptrdiff_t>(kx) * gs[2];
        }
    const VF zero = hn::Zero(d);
    auto window = [&](const float* p, const float* dyp, float* q, size_t l, auto full) {
        constexpr bool kFull = decltype(full)::value;
        const size_t n = kFull ? N : lanes - l;
        MF nan = hn::FirstN(d, 0);
        VI idx = WinnerVec<NT, false, kFull>(d, p + l, off, nt, n, nan);
        if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) {
            nan = hn::FirstN(d, 0);
            idx = WinnerVec<NT, true, kFull>(d, p + l, off, nt, n, nan);
        }
        // + 0: naive's sum of a -0 gradient is +0.
        const VF dy = hn::Add(kFull ? hn::LoadU(d, dyp + l) : LoadFirst(d, dyp + l, n, 0.f), zero);
        for (size_t t = 0; t < (NT ? NT : nt); ++t) {
            const VF v = hn::IfThenElseZero(
                    hn::RebindMask(d, hn::Eq(idx, hn::Set(di, static_cast<int32_t>(t)))), dy);
            if (kFull)
                hn::StoreU(v, d, q + goff[t] + l);
            else
                StoreFirst(v, d, q + goff[t] + l, n);
        }
    };
    for (size_t z = 0; z < g.in[0]; ++z) {
        const float* s = src + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dy = diff + static_cast<ptrdiff_t>(z) * ys[0];
        float* gr = grad + static_cast<ptrdiff_t>(z) * gs[0];
        for (size_t oy = 0; oy < g.out[1]; ++oy) {
            const float* srow = s + static_cast<ptrdiff_t>(oy * kh) * ss[1];
            const float* dyrow = dy + static_cast<ptrdiff_t>(oy) * ys[1];
            float* grow = gr + static_cast<ptrdiff_t>(oy * kh) * gs[1];
            for (size_t ox = 0; ox < g.out[2]; ++ox) {
                const float* p = srow + static_cast<ptrdiff_t>(ox * kw) * ss[2];
                const float* dyp = dyrow + static_cast<ptrdiff_t>(ox) * ys[2];
                float* q = grow + static_cast<ptrdiff_t>(ox * kw) * gs[2];
                size_t l = 0;
                for (; l + N <= lanes; l += N)
                    window(p, dyp, q, l, std::true_type());
                if (l < lanes)
                    window(p, dyp, q, l, std::false_type());
            }
            for (size_t ky = 0; ky < kh; ++ky)
                ZeroPositions(d, grow + static_cast<ptrdiff_t>(ky) * gs[1], gs[2],
                              g.out[2] * kw, g.in[2], lanes);
        }
        for (size_t y = g.out[1] * kh; y < g.in[1]; ++y)
            ZeroPositions(d, gr + static_cast<ptrdiff_t>(y) * gs[1], gs[2], 0, g.in[2], lanes);
    }
}

// 3x3 windows of stride 2 and padding 1 (ResNet's stem pooling), each element's gradient summed
// where it is made: input row 2oy (tap row 1 of window row oy only) and column 2ox are written
// from one window's gradient, the odd columns add the previous window's (kept in `pend`), and
// the odd rows add the previous window row's, kept in one carry row: row 2oy - 1 is written
// once window row oy has added its share, row 2oy + 1 waits in the carry. Every element is
// written once, its gradients added in naive's (output row-major) order.
void Stride2By3Lanes(DF d, const float* src, const ptrdiff_t* ss, const float* diff,
                     const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                     const PoolDims& g) {
    const DI di;
    const size_t N = hn::Lanes(d), lp = (lanes + N - 1) / N * N;
    const size_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    Scratch& sc = ThreadScratch();
    float* carry = AlignedIn(sc.acc, W * lp, HWY_MAX_BYTES);
    float* pend = AlignedIn(sc.hv, 3 * lp, HWY_MAX_BYTES);  // taps (ky, 2) of the window before
    const VF zero = hn::Zero(d);
    // A window's valid taps (row-major): src offsets from its tap (0, 0), and each tap's place
    // among them (-1: padding).
    struct Valid {
        size_t nt;
        ptrdiff_t off[9];
        int32_t at[9];
    } valid[2][2][2][2];  // [top cut][bottom cut][left cut][right cut]
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            for (int c = 0; c < 2; ++c)
                for (int e = 0; e < 2; ++e) {
                    Valid& v = valid[a][b][c][e];
                    v.nt = 0;
                    for (int ky = 0; ky < 3; ++ky)
                        for (int kx = 0; kx < 3; ++kx) {
                            const bool ok = !(a && ky == 0) && !(b && ky == 2) &&
                                            !(c && kx == 0) && !(e && kx == 2);
                            v.at[ky * 3 + kx] = ok ? static_cast<int32_t>(v.nt) : -1;
                            if (ok)
                                v.off[v.nt++] = ky * ss[1] + kx * ss[2];
                        }
                }
    for (size_t z = 0; z < g.in[0]; ++z) {
        const float* sz = src + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dz = diff + static_cast<ptrdiff_t>(z) * ys[0];
        float* gz = grad + static_cast<ptrdiff_t>(z) * gs[0];
        for (size_t oy = 0; oy < OH; ++oy) {
            const bool top = oy == 0, bottom = 2 * oy + 1 >= H;
            // Rows 2oy - 1, 2oy, 2oy + 1 of src (tap row 0 at r0) and grad.
            const float* srow = sz + (2 * static_cast<ptrdiff_t>(oy) - 1) * ss[1];
            float* g0 = gz + (2 * static_cast<ptrdiff_t>(oy) - 1) * gs[1];
            float* g1 = g0 + gs[1];
            const float* dyrow = dz + static_cast<ptrdiff_t>(oy) * ys[1];
            for (size_t ox = 0; ox < OW; ++ox) {
                const bool left = ox == 0, right = 2 * ox + 1 >= W;
                const Valid& v = valid[top][bottom][left][right];
                const ptrdiff_t x0 = 2 * static_cast<ptrdiff_t>(ox) - 1;
                const float* p = srow + x0 * ss[2];
                const float* dyp = dyrow + static_cast<ptrdiff_t>(ox) * ys[2];
                auto chunk = [&](size_t l, auto full) {
                    constexpr bool kFull = decltype(full)::value;
                    const size_t n = kFull ? N : lanes - l;
                    MF nan = hn::FirstN(d, 0);
                    VI idx = v.nt == 9 ? WinnerVec<9, false, kFull>(d, p + l, v.off, 9, n, nan)
                                       : WinnerVec<0, false, kFull>(d, p + l, v.off, v.nt, n, nan);
                    if (HWY_UNLIKELY(!hn::AllFalse(d, nan)))
                        idx = WinnerVec<0, true, kFull>(d, p + l, v.off, v.nt, n, nan);
                    // + 0: naive's sum of a -0 gradient is +0.
                    const VF dy = hn::Add(
                            kFull ? hn::LoadU(d, dyp + l) : LoadFirst(d, dyp + l, n, 0.f), zero);
                    auto tap = [&](int t) {
                        return hn::IfThenElseZero(
                                hn::RebindMask(d, hn::Eq(idx, hn::Set(di, v.at[t]))), dy);
                    };
                    auto store = [&](VF val, float* o) {
                        if (kFull)
                            hn::StoreU(val, d, o + l);
                        else
                            StoreFirst(val, d, o + l, n);
                    };
                    float* cy = carry + l;
                    float* pd = pend + l;
                    const ptrdiff_t c1 = (x0 + 1) * gs[2];  // column 2ox
                    if (!left) {
                        const ptrdiff_t c0 = x0 * gs[2];
                        if (!top)
                            store(hn::Add(hn::Add(hn::Load(d, cy + x0 * lp), hn::Load(d, pd)),
                                          tap(0)),
                                  g0 + c0);
                        store(hn::Add(hn::Load(d, pd + lp), tap(3)), g1 + c0);
                        if (!bottom)
                            hn::Store(hn::Add(hn::Load(d, pd + 2 * lp), tap(6)), d,
                                      cy + x0 * lp);
                    }
                    if (!top)
                        store(hn::Add(hn::Load(d, cy + (x0 + 1) * lp), tap(1)), g0 + c1);
                    store(tap(4), g1 + c1);
                    if (!bottom)
                        hn::Store(tap(7), d, cy + (x0 + 1) * lp);
                    hn::Store(tap(2), d, pd);
                    hn::Store(tap(5), d, pd + lp);
                    hn::Store(tap(8), d, pd + 2 * lp);
                };
                size_t l = 0;
                for (; l + N <= lanes; l += N)
                    chunk(l, std::true_type());
                if (l < lanes)
                    chunk(l, std::false_type());
            }
            // Column 2 OW - 1, the last windows' tap column 2, where it lies in the row.
            const size_t xe = 2 * OW - 1;
            if (xe < W)
                for (size_t l = 0; l < lanes; l += N) {
                    const size_t n = std::min(N, lanes - l);
                    float* cy = carry + xe * lp + l;
                    const float* pd = pend + l;
                    const ptrdiff_t c = static_cast<ptrdiff_t>(xe) * gs[2] + static_cast<ptrdiff_t>(l);
                    if (!top)
                        StoreFirst(hn::Add(hn::Load(d, cy), hn::Load(d, pd)), d, g0 + c, n);
                    StoreFirst(hn::Load(d, pd + lp), d, g1 + c, n);
                    if (!bottom)
                        hn::Store(hn::Load(d, pd + 2 * lp), d, cy);
                }
        }
        // The last window row's tap row 2, where it lies in the plane: nothing adds to it.
        if (2 * OH - 1 < H) {
            float* gl = gz + static_cast<ptrdiff_t>(2 * OH - 1) * gs[1];
            for (size_t x = 0; x < W; ++x)
                for (size_t l = 0; l < lanes; l += N)
                    StoreFirst(hn::Load(d, carry + x * lp + l), d,
                               gl + static_cast<ptrdiff_t>(x) * gs[2] + static_cast<ptrdiff_t>(l),
                               std::min(N, lanes - l));
        }
    }
}

void MaxPoolLanesBackward(const float* src, const ptrdiff_t* ss, const float* diff,
                          const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                          const PoolDims& g) {
    const DF d;
    // Whole windows of 2x2 and 3x3 with their taps unrolled.
    const size_t taps = g.k[1] * g.k[2];
    if (g.s[1] == g.k[1] && g.s[2] == g.k[2] && g.p[1] == 0 && g.p[2] == 0)
        return taps == 4 ? TiledLanes<4>(d, src, ss, diff, ys, grad, gs, lanes, g)
                         : TiledLanes<0>(d, src, ss, diff, ys, grad, gs, lanes, g);
    if (g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 && g.s[2] == 2 && g.p[1] == 1 && g.p[2] == 1)
        return Stride2By3Lanes(d, src, ss, diff, ys, grad, gs, lanes, g);
    if (taps == 4)
        return LanesBackward<4>(d, src, ss, diff, ys, grad, gs, lanes, g);
    if (taps == 9)
        return LanesBackward<9>(d, src, ss, diff, ys, grad, gs, lanes, g);
    LanesBackward<0>(d, src, ss, diff, ys, grad, gs, lanes, g);
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
