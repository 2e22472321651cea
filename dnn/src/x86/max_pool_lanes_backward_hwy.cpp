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
template <class D>
HWY_INLINE hn::Vec<D> LoadFirst(D d, const float* p, size_t n, float fill) {
#if HWY_TARGET <= HWY_AVX2
    const auto m = hn::FirstN(d, n);
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, fill));
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        tmp[i] = i < n ? p[i] : fill;
    return hn::Load(d, tmp);
#endif
}

template <class D>
HWY_INLINE void StoreFirst(hn::Vec<D> v, D d, float* p, size_t n) {
#if HWY_TARGET <= HWY_AVX2
    hn::BlendedStore(v, hn::FirstN(d, n), d, p);
#else
    HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(v, d, tmp);
    std::memcpy(p, tmp, n * sizeof(float));
#endif
}

// Each thread's buffers, kept between calls.
struct Scratch {
    std::vector<float> carry;
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

// One window's winner over lanes [0, n) of p + off[t] (t < nt, naive's order), as the tap's
// place t in that list. EXACT: naive's rule (a NaN wins, the first of them); otherwise the first
// maximum by `>`, and the lanes that read a NaN added to `nan` (the caller then asks again).
template <size_t NT, bool EXACT, bool FULL, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Winner(D d, const float* p, const ptrdiff_t* off,
                                                 size_t nt_runtime, size_t n, hn::Mask<D>& nan) {
    const hn::RebindToSigned<D> di;
    const size_t nt = NT ? NT : nt_runtime;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    auto load = [&](const float* q) {
        return FULL ? hn::LoadU(d, q) : LoadFirst(d, q, n, kLowest);
    };
    auto best = load(p + off[0]);
    auto idx = hn::Zero(di);
    if (!EXACT)
        nan = hn::Or(nan, hn::IsNaN(best));
    for (size_t t = 1; t < nt; ++t) {
        const auto v = load(p + off[t]);
        hn::Mask<D> take;
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
HWY_INLINE void ZeroPositions(DF d, float* row, ptrdiff_t gs2, size_t x0, size_t x1, size_t lanes) {
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
void TiledLanes(DF d, const float* src, const ptrdiff_t* ss, const float* diff, const ptrdiff_t* ys,
                float* grad, const ptrdiff_t* gs, size_t lanes, const PoolDims& g) {
    const DI di;
    const size_t N = hn::Lanes(d), kh = g.k[1], kw = g.k[2], nt = kh * kw;
    ptrdiff_t off[kMaxPoolLanesBackwardTaps], goff[kMaxPoolLanesBackwardTaps];
    for (size_t ky = 0; ky < kh; ++ky)
        for (size_t kx = 0; kx < kw; ++kx) {
            off[ky * kw + kx] =
                    static_cast<ptrdiff_t>(ky) * ss[1] + static_cast<ptrdiff_t>(kx) * ss[2];
            goff[ky * kw + kx] =
                    static_cast<ptrdiff_t>(ky) * gs[1] + static_cast<ptrdiff_t>(kx) * gs[2];
        }
    const VF zero = hn::Zero(d);
    auto window = [&](const float* p, const float* dyp, float* q, size_t l, auto full) {
        constexpr bool kFull = decltype(full)::value;
        const size_t n = kFull ? N : lanes - l;
        MF nan = hn::FirstN(d, 0);
        VI idx = Winner<NT, false, kFull>(d, p + l, off, nt, n, nan);
        if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) {
            nan = hn::FirstN(d, 0);
            idx = Winner<NT, true, kFull>(d, p + l, off, nt, n, nan);
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
                ZeroPositions(d, grow + static_cast<ptrdiff_t>(ky) * gs[1], gs[2], g.out[2] * kw,
                              g.in[2], lanes);
        }
        for (size_t y = g.out[1] * kh; y < g.in[1]; ++y)
            ZeroPositions(d, gr + static_cast<ptrdiff_t>(y) * gs[1], gs[2], 0, g.in[2], lanes);
    }
}

// A window's winner over nine taps held in registers (row-major), as the tap's number: the first
// maximum by `>` (a -0/+0 tie keeps the first). NaNs are skipped; the caller finds them.
template <class V>
HWY_INLINE auto WinnerOf9(const V* v) {
    const hn::RebindToSigned<hn::DFromV<V>> di;
    V best = v[0];
    auto idx = hn::Zero(di);
    for (int t = 1; t < 9; ++t) {
        const auto take = hn::Gt(v[t], best);
        best = hn::IfThenElse(take, v[t], best);
        idx = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, t), idx);
    }
    return idx;
}

// acc plus dy in the lanes of m: a masked add, where a select of dy and an add were two.
template <class M, class V>
HWY_INLINE V AddWhere(M m, V acc, V dy) {
    return hn::IfThenElse(m, hn::Add(acc, dy), acc);
}

// 3x3 windows of stride 2 and padding 1 (ResNet's stem pooling) on one plane, each element's
// gradient summed where it is made: input row 2oy (tap row 1 of window row oy only) and column
// 2ox are written from one window's gradient, the odd columns add the previous window's (its tap
// column 2, carried in registers along the row), and the odd rows add the previous window row's,
// kept in one carry row: row 2oy - 1 is written once window row oy has added its share, row
// 2oy + 1 waits in the carry. Every element is written once, its gradients added in naive's
// (output row-major) order.
//
// kFast: the windows inside the plane on whole vectors test no tap for NaN (nine tests and ORs
// a window were a fifth of its operations); each adds the four elements it alone owns (taps
// (1|2, 1|2): every element has one owning window) into `owned`, which a NaN turns into NaN, and
// the other windows report the NaNs they see. Returns whether there was one: the caller then
// runs the plane again with every window tested (!kFast), which rewrites all of grad. An
// infinity of each sign, or sums that overflow, do the same; the rerun is exact, only slower.
template <bool kFast, class D>
bool Stride2By3Plane(D d, const float* sz, const ptrdiff_t* ss, const float* dz,
                     const ptrdiff_t* ys, float* gz, const ptrdiff_t* gs, size_t lanes,
                     const PoolDims& g, float* carry) {
    using VF = hn::Vec<D>;
    using MF = hn::Mask<D>;
    using VI = hn::Vec<hn::RebindToSigned<D>>;
    const hn::RebindToSigned<D> di;
    const size_t N = hn::Lanes(d), lp = (lanes + N - 1) / N * N;
    const size_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
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
                            const bool ok = !(a && ky == 0) && !(b && ky == 2) && !(c && kx == 0) &&
                                            !(e && kx == 2);
                            v.at[ky * 3 + kx] = ok ? static_cast<int32_t>(v.nt) : -1;
                            if (ok)
                                v.off[v.nt++] = ky * ss[1] + kx * ss[2];
                        }
                }
    ptrdiff_t inner_off[9];
    std::copy_n(valid[0][0][0][0].off, 9, inner_off);
    VF owned = zero;
    MF seen = hn::FirstN(d, 0);
    // Window ox has its tap column 2 in the plane while 2ox + 1 < W.
    const size_t ox_whole = std::min(OW, W / 2);
    for (size_t oy = 0; oy < OH; ++oy) {
        const bool top = oy == 0, bottom = 2 * oy + 1 >= H;
        // Rows 2oy - 1, 2oy, 2oy + 1 of src (tap row 0 at srow) and grad.
        const float* srow = sz + (2 * static_cast<ptrdiff_t>(oy) - 1) * ss[1];
        float* g0 = gz + (2 * static_cast<ptrdiff_t>(oy) - 1) * gs[1];
        float* g1 = g0 + gs[1];
        const float* dyrow = dz + static_cast<ptrdiff_t>(oy) * ys[1];
        // One lane chunk [l, l + N) along the row; pend: the window before's tap column 2.
        auto run = [&](size_t l, auto full) {
            constexpr bool kFull = decltype(full)::value;
            const size_t n = kFull ? N : lanes - l;
            auto store = [&](VF val, float* o) {
                if (kFull)
                    hn::StoreU(val, d, o + l);
                else
                    StoreFirst(val, d, o + l, n);
            };
            float* cy = carry + l;
            VF pend0 = zero, pend1 = zero, pend2 = zero;
            // kInner: a window inside the plane (no tap cut), whose taps and their places are
            // constants, and whose grad rows and columns all exist: no branches, and the tap
            // numbers compared as constants rather than read per window.
            auto window = [&](size_t ox, auto inner) {
                constexpr bool kInner = decltype(inner)::value;
                constexpr bool kUntested = kFast && kFull && kInner;
                const bool top_ = !kInner && top, bottom_ = !kInner && bottom;
                const bool left_ = !kInner && ox == 0, right_ = !kInner && 2 * ox + 1 >= W;
                const Valid& v = valid[top_][bottom_][left_][right_];
                const ptrdiff_t x0 = 2 * static_cast<ptrdiff_t>(ox) - 1;
                const float* p = srow + x0 * ss[2] + l;
                VI idx;
                if constexpr (kUntested) {
                    VF t[9];
                    for (int k = 0; k < 9; ++k)
                        t[k] = hn::LoadU(d, p + inner_off[k]);
                    idx = WinnerOf9(t);
                    owned = hn::Add(owned, hn::Add(hn::Add(t[4], t[5]), hn::Add(t[7], t[8])));
                } else {
                    MF nan = hn::FirstN(d, 0);
                    const ptrdiff_t* off = kInner ? inner_off : v.off;
                    idx = kInner || v.nt == 9 ? Winner<9, false, kFull>(d, p, off, 9, n, nan)
                                              : Winner<0, false, kFull>(d, p, off, v.nt, n, nan);
                    if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) {
                        seen = hn::Or(seen, nan);
                        idx = Winner<0, true, kFull>(d, p, v.off, v.nt, n, nan);
                    }
                }
                const float* dyp = dyrow + static_cast<ptrdiff_t>(ox) * ys[2] + l;
                // + 0: naive's sum of a -0 gradient is +0.
                const VF dy = hn::Add(kFull ? hn::LoadU(d, dyp) : LoadFirst(d, dyp, n, 0.f), zero);
                auto won = [&](int t) {
                    return hn::RebindMask(d, hn::Eq(idx, hn::Set(di, kInner ? t : v.at[t])));
                };
                const ptrdiff_t c1 = (x0 + 1) * gs[2];  // column 2ox
                if (!left_) {
                    const ptrdiff_t c0 = x0 * gs[2];
                    if (!top_)
                        store(AddWhere(won(0), hn::Add(hn::Load(d, cy + x0 * lp), pend0), dy),
                              g0 + c0);
                    store(AddWhere(won(3), pend1, dy), g1 + c0);
                    if (!bottom_)
                        hn::Store(AddWhere(won(6), pend2, dy), d, cy + x0 * lp);
                }
                if (!top_)
                    store(AddWhere(won(1), hn::Load(d, cy + (x0 + 1) * lp), dy), g0 + c1);
                store(hn::IfThenElseZero(won(4), dy), g1 + c1);
                if (!bottom_)
                    hn::Store(hn::IfThenElseZero(won(7), dy), d, cy + (x0 + 1) * lp);
                pend0 = hn::IfThenElseZero(won(2), dy);
                pend1 = hn::IfThenElseZero(won(5), dy);
                pend2 = hn::IfThenElseZero(won(8), dy);
            };
            size_t ox = 0;
            if (!top && !bottom) {
                if (OW > 0)
                    window(ox++, std::false_type());
                for (; ox < ox_whole; ++ox)
                    window(ox, std::true_type());
            }
            for (; ox < OW; ++ox)
                window(ox, std::false_type());
            // Column 2 OW - 1, the last windows' tap column 2, where it lies in the row.
            const size_t xe = 2 * OW - 1;
            if (xe < W) {
                const ptrdiff_t c = static_cast<ptrdiff_t>(xe) * gs[2];
                if (!top)
                    store(hn::Add(hn::Load(d, cy + xe * lp), pend0), g0 + c);
                store(pend1, g1 + c);
                if (!bottom)
                    hn::Store(pend2, d, cy + xe * lp);
            }
        };
        size_t l = 0;
        for (; l + N <= lanes; l += N)
            run(l, std::true_type());
        if (l < lanes)
            run(l, std::false_type());
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
    return kFast && !(hn::AllFalse(d, seen) && hn::AllFalse(d, hn::IsNaN(owned)));
}

template <class D>
void Stride2By3Lanes(D d, const float* src, const ptrdiff_t* ss, const float* diff,
                     const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                     const PoolDims& g) {
    const size_t N = hn::Lanes(d), lp = (lanes + N - 1) / N * N;
    float* carry = AlignedIn(ThreadScratch().carry, g.in[2] * lp, HWY_MAX_BYTES);
    for (size_t z = 0; z < g.in[0]; ++z) {
        const float* sz = src + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dz = diff + static_cast<ptrdiff_t>(z) * ys[0];
        float* gz = grad + static_cast<ptrdiff_t>(z) * gs[0];
        if (Stride2By3Plane<true>(d, sz, ss, dz, ys, gz, gs, lanes, g, carry))
            Stride2By3Plane<false>(d, sz, ss, dz, ys, gz, gs, lanes, g, carry);
    }
}

void MaxPoolLanesBackward(const float* src, const ptrdiff_t* ss, const float* diff,
                          const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                          const PoolDims& g) {
    const DF d;
    if (g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 && g.s[2] == 2 && g.p[1] == 1 && g.p[2] == 1) {
#if HWY_TARGET != HWY_SCALAR
        // Lanes a multiple of half a vector but not of a vector (blocks of 8 at AVX-512, 24 or
        // 40 channels): half vectors, all whole, so that every window inside the plane takes the
        // untested pass.
        const hn::Half<DF> dh;
        if (lanes % hn::Lanes(d) != 0 && lanes % hn::Lanes(dh) == 0)
            return Stride2By3Lanes(dh, src, ss, diff, ys, grad, gs, lanes, g);
#endif
        return Stride2By3Lanes(d, src, ss, diff, ys, grad, gs, lanes, g);
    }
    if (g.k[1] * g.k[2] == 4)
        return TiledLanes<4>(d, src, ss, diff, ys, grad, gs, lanes, g);
    TiledLanes<0>(d, src, ss, diff, ys, grad, gs, lanes, g);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

bool max_pool_lanes_backward_takes(const PoolDims& g) {
    if (g.k[0] != 1 || g.s[0] != 1 || g.p[0] != 0)
        return false;
    const bool tiled = g.s[1] == g.k[1] && g.s[2] == g.k[2] && g.p[1] == 0 && g.p[2] == 0 &&
                       g.k[1] * g.k[2] <= kMaxPoolLanesBackwardTaps;
    const bool stem =
            g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 && g.s[2] == 2 && g.p[1] == 1 && g.p[2] == 1;
    return tiled || stem;
}

HWY_EXPORT(MaxPoolLanesBackward);

void max_pool_lanes_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                             const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                             const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanesBackward)(src, ss, diff, ys, grad, gs, lanes, g);
}

}  // namespace neomeg::dnn::x86
#endif
