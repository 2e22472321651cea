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

#include <hwy/cache_control.h>
#include <algorithm>
#include <bit>
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

// One window's winner over its taps load(off[t]) (t < nt, naive's order), as the tap's place t
// in that list. EXACT: naive's rule (a NaN wins, the first of them); otherwise the first maximum
// by `>`, and the lanes that read a NaN added to `nan` (the caller then asks again).
template <size_t NT, bool EXACT, class D, class Load>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> WinnerBy(D d, const Load& load, const ptrdiff_t* off,
                                                   size_t nt_runtime, hn::Mask<D>& nan) {
    const hn::RebindToSigned<D> di;
    const size_t nt = NT ? NT : nt_runtime;
    auto best = load(off[0]);
    auto idx = hn::Zero(di);
    if (!EXACT)
        nan = hn::Or(nan, hn::IsNaN(best));
    for (size_t t = 1; t < nt; ++t) {
        const auto v = load(off[t]);
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
    (void)d;
    return idx;
}

// WinnerBy over lanes [0, n) of p + off[t] (float32; the lanes past n read -inf).
template <size_t NT, bool EXACT, bool FULL, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Winner(D d, const float* p, const ptrdiff_t* off,
                                                 size_t nt_runtime, size_t n, hn::Mask<D>& nan) {
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    auto load = [&](ptrdiff_t o) {
        return FULL ? hn::LoadU(d, p + o) : LoadFirst(d, p + o, n, kLowest);
    };
    return WinnerBy<NT, EXACT>(d, load, off, nt_runtime, nan);
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

// How a chunk of lanes is read and written. float32: one vector. bfloat16: two float32 vectors,
// the chunk's even and odd lanes as 32-bit pairs hold them (even ones widened by a shift, odd
// ones by a mask, rounded back and paired on the store), so that a chunk of 2N lanes is one
// vector of bits and no lane moves; lanes are independent windows, their order does not matter.
// Load: the chunk at p into v[0, kVecs), its first n lanes (kFull: all), the others `fill`.
// Store: v's first n lanes (kFull: all) to p (`stream`, bfloat16 whole chunks: non-temporal, p
// aligned to a vector); bfloat16 each rounded once as naive converts, as
// kRound says what v may hold: kAny (NaNs too), kNoNaN (sums without NaN: nearest even alone),
// kExact (bfloat16 values, no NaN: their upper halves).
enum Round { kExact, kNoNaN, kAny };
struct F32Io {
    using T = float;
    static constexpr size_t kVecs = 1;
    static constexpr bool kRounds = false;

    template <bool kFull, class D>
    static HWY_INLINE void Load(D d, const float* p, size_t n, float fill, hn::Vec<D>* v) {
        v[0] = kFull ? hn::LoadU(d, p) : LoadFirst(d, p, n, fill);
    }

    template <bool kFull, Round, class D>
    static HWY_INLINE void Store(D d, const hn::Vec<D>* v, float* p, size_t n, bool) {
        if (kFull)
            hn::StoreU(v[0], d, p);
        else
            StoreFirst(v[0], d, p, n);
    }
};

// float32 to bfloat16 as naive converts (Eigen: round to nearest even, a NaN to a quiet NaN keeping
// its sign), the bits in each lane's upper half; kRound as Store's.
template <Round kRound, class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> RoundToBf16(D, hn::Vec<D> v) {
    const hn::RebindToUnsigned<D> du;
    const auto u = hn::BitCast(du, v);
    if constexpr (kRound == kExact)
        return u;
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), odd));
    if constexpr (kRound == kNoNaN)
        return rounded;
    const auto nan = hn::Or(hn::And(u, hn::Set(du, 0x80000000u)), hn::Set(du, 0x7FC00000u));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded);
}

struct Bf16Io {
    using T = uint16_t;
    static constexpr bool kRounds = true;
#if HWY_TARGET == HWY_SCALAR
    static constexpr size_t kVecs = 1;  // one lane: a chunk is one value

    template <bool kFull, class D>
    static HWY_INLINE void Load(D d, const uint16_t* p, size_t, float, hn::Vec<D>* v) {
        v[0] = hn::Set(d, std::bit_cast<float>(static_cast<uint32_t>(p[0]) << 16));
    }

    template <bool kFull, Round kRound, class D>
    static HWY_INLINE void Store(D d, const hn::Vec<D>* v, uint16_t* p, size_t, bool) {
        p[0] = static_cast<uint16_t>(hn::GetLane(RoundToBf16<kRound>(d, v[0])) >> 16);
    }
#else
    static constexpr size_t kVecs = 2;

    template <bool kFull, class D>
    static HWY_INLINE void Load(D d, const uint16_t* p, size_t n, float fill, hn::Vec<D>* v) {
        const hn::RebindToUnsigned<D> du;
        const hn::Repartition<uint16_t, D> d16;
        hn::Vec<decltype(du)> bits;
        if constexpr (kFull) {
            bits = hn::BitCast(du, hn::LoadU(d16, p));
        } else {
            HWY_ALIGN uint16_t tmp[HWY_MAX_BYTES / sizeof(uint16_t)];
            const auto f = static_cast<uint16_t>(std::bit_cast<uint32_t>(fill) >> 16);
            for (size_t i = 0; i < hn::Lanes(d16); ++i)
                tmp[i] = i < n ? p[i] : f;
            bits = hn::BitCast(du, hn::Load(d16, tmp));
        }
        v[0] = hn::BitCast(d, hn::ShiftLeft<16>(bits));
        v[1] = hn::BitCast(d, hn::And(bits, hn::Set(du, 0xFFFF0000u)));
    }

    template <bool kFull, Round kRound, class D>
    static HWY_INLINE void Store(D d, const hn::Vec<D>* v, uint16_t* p, size_t n, bool stream) {
        const hn::RebindToUnsigned<D> du;
        const hn::Repartition<uint16_t, D> d16;
        const auto pair = hn::BitCast(
                d16, hn::Or(hn::ShiftRight<16>(RoundToBf16<kRound>(d, v[0])),
                            hn::And(RoundToBf16<kRound>(d, v[1]), hn::Set(du, 0xFFFF0000u))));
        if constexpr (kFull) {
            if (stream)
                hn::Stream(pair, d16, p);
            else
                hn::StoreU(pair, d16, p);
        } else {
            HWY_ALIGN uint16_t tmp[HWY_MAX_BYTES / sizeof(uint16_t)];
            hn::Store(pair, d16, tmp);
            std::memcpy(p, tmp, n * sizeof(uint16_t));
        }
    }
#endif
};

// 3x3 windows of stride 2 and padding 1 (ResNet's stem pooling) on one plane, each element's
// gradient summed where it is made: input row 2oy (tap row 1 of window row oy only) and column
// 2ox are written from one window's gradient, the odd columns add the previous window's (its tap
// column 2, carried in registers along the row), and the odd rows add the previous window row's,
// kept in one carry row (float32, whatever Io's type): row 2oy - 1 is written once window row oy
// has added its share, row 2oy + 1 waits in the carry. Every element is written once, its
// gradients added in naive's (output row-major) order, in float32.
//
// kFast: the windows inside the plane on whole chunks test no tap for NaN (nine tests and ORs
// a window were a fifth of its operations); each adds the four elements it alone owns (taps
// (1|2, 1|2): every element has one owning window) into `owned`, which a NaN turns into NaN, and
// the other windows report the NaNs they see. Returns whether there was one: the caller then
// runs the plane again with every window tested (!kFast), which rewrites all of grad. An
// infinity of each sign, or sums that overflow, do the same; the rerun is exact, only slower.
// bfloat16 also sums diff (`dsum`): without a NaN there, the fast pass rounds its sums to nearest
// even without the NaN case and stores single gradients as they are; a NaN reruns the plane.
template <bool kFast, class Io, class D>
bool Stride2By3Plane(D d, const typename Io::T* sz, const ptrdiff_t* ss, const typename Io::T* dz,
                     const ptrdiff_t* ys, typename Io::T* gz, const ptrdiff_t* gs, size_t lanes,
                     const PoolDims& g, float* carry, bool stream) {
    using T = typename Io::T;
    using VF = hn::Vec<D>;
    using MF = hn::Mask<D>;
    using VI = hn::Vec<hn::RebindToSigned<D>>;
    constexpr size_t K = Io::kVecs;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    const hn::RebindToSigned<D> di;
    // A chunk of C lanes is K vectors; vector k of the chunk at lane l of carry position x lies
    // at carry + x * lp + l + k * N.
    const size_t N = hn::Lanes(d), C = K * N, lp = (lanes + C - 1) / C * C;
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
    // bfloat16: the fast pass's diff summed, NaN if a gradient was (or infinities of both signs).
    VF dsum = zero;
    MF seen = hn::FirstN(d, 0);
    // Window ox has its tap column 2 in the plane while 2ox + 1 < W.
    const size_t ox_whole = std::min(OW, W / 2);
    for (size_t oy = 0; oy < OH; ++oy) {
        const bool top = oy == 0, bottom = 2 * oy + 1 >= H;
        // Rows 2oy - 1, 2oy, 2oy + 1 of src (tap row 0 at srow) and grad.
        const T* srow = sz + (2 * static_cast<ptrdiff_t>(oy) - 1) * ss[1];
        T* g0 = gz + (2 * static_cast<ptrdiff_t>(oy) - 1) * gs[1];
        T* g1 = g0 + gs[1];
        const T* dyrow = dz + static_cast<ptrdiff_t>(oy) * ys[1];
        // One lane chunk [l, l + C) along the row; pend: the window before's tap column 2.
        auto run = [&](size_t l, auto full) {
            constexpr bool kFull = decltype(full)::value;
            const size_t n = kFull ? C : lanes - l;
            // kSum: val may be a sum of two or more gradients (rounded), else one gradient or 0.
            // The fast pass has seen no NaN in diff (else it reruns), so it rounds without one.
            auto store = [&](const VF* val, T* o, auto sum) {
                constexpr Round kRound = !kFast ? kAny : decltype(sum)::value ? kNoNaN : kExact;
                Io::template Store<kFull, kRound>(d, val, o + l, n, stream);
            };
            float* cy = carry + l;
            auto carried = [&](ptrdiff_t x, size_t k) { return hn::Load(d, cy + x * lp + k * N); };
            auto keep = [&](VF val, ptrdiff_t x, size_t k) {
                hn::Store(val, d, cy + x * lp + k * N);
            };
            VF pend0[K], pend1[K], pend2[K];
            for (size_t k = 0; k < K; ++k)
                pend0[k] = pend1[k] = pend2[k] = zero;
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
                const T* p = srow + x0 * ss[2] + l;
                if constexpr (Io::kRounds && kUntested) {
                    // From memory (stream), the next window row's two new src rows at this
                    // window's two new columns, each position's lines, once per row (chunk 0;
                    // 32x64x56x56 at one thread, best of six processes: 3.08 -> 2.34 ms).
                    if (l == 0 && stream)
                        for (size_t r = 2 * oy + 2; r <= 2 * oy + 3 && r < H; ++r)
                            for (ptrdiff_t c = x0 + 1; c <= x0 + 2; ++c) {
                                const auto* q = reinterpret_cast<const char*>(
                                        sz + static_cast<ptrdiff_t>(r) * ss[1] + c * ss[2]);
                                for (size_t b = 0; b < lanes * sizeof(T); b += 64)
                                    hwy::Prefetch(q + b);
                            }
                }
                VI idx[K];
                for (size_t k = 0; k < K; ++k) {
                    // Vector k of the chunk at p + o (the other vectors' work is dead code).
                    auto load = [&](ptrdiff_t o) {
                        VF t[K];
                        Io::template Load<kFull>(d, p + o, n, kLowest, t);
                        return t[k];
                    };
                    if constexpr (kUntested) {
                        VF t[9];
                        for (int q = 0; q < 9; ++q)
                            t[q] = load(inner_off[q]);
                        idx[k] = WinnerOf9(t);
                        owned = hn::Add(owned, hn::Add(hn::Add(t[4], t[5]), hn::Add(t[7], t[8])));
                    } else {
                        MF nan = hn::FirstN(d, 0);
                        const ptrdiff_t* off = kInner ? inner_off : v.off;
                        idx[k] = kInner || v.nt == 9 ? WinnerBy<9, false>(d, load, off, 9, nan)
                                                     : WinnerBy<0, false>(d, load, off, v.nt, nan);
                        if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) {
                            seen = hn::Or(seen, nan);
                            idx[k] = WinnerBy<0, true>(d, load, v.off, v.nt, nan);
                        }
                    }
                }
                VF dy[K];
                Io::template Load<kFull>(d, dyrow + static_cast<ptrdiff_t>(ox) * ys[2] + l, n, 0.f,
                                         dy);
                for (size_t k = 0; k < K; ++k) {
                    dy[k] = hn::Add(dy[k], zero);  // naive's sum of a -0 gradient is +0
                    if constexpr (kFast && Io::kRounds)
                        dsum = hn::Add(dsum, dy[k]);
                }
                auto won = [&](size_t k, int t) {
                    return hn::RebindMask(d, hn::Eq(idx[k], hn::Set(di, kInner ? t : v.at[t])));
                };
                VF o[K];
                const ptrdiff_t c1 = (x0 + 1) * gs[2];  // column 2ox
                if (!left_) {
                    const ptrdiff_t c0 = x0 * gs[2];
                    if (!top_) {
                        for (size_t k = 0; k < K; ++k)
                            o[k] = AddWhere(won(k, 0), hn::Add(carried(x0, k), pend0[k]), dy[k]);
                        store(o, g0 + c0, std::true_type());
                    }
                    for (size_t k = 0; k < K; ++k)
                        o[k] = AddWhere(won(k, 3), pend1[k], dy[k]);
                    store(o, g1 + c0, std::true_type());
                    if (!bottom_)
                        for (size_t k = 0; k < K; ++k)
                            keep(AddWhere(won(k, 6), pend2[k], dy[k]), x0, k);
                }
                if (!top_) {
                    for (size_t k = 0; k < K; ++k)
                        o[k] = AddWhere(won(k, 1), carried(x0 + 1, k), dy[k]);
                    store(o, g0 + c1, std::true_type());
                }
                for (size_t k = 0; k < K; ++k)
                    o[k] = hn::IfThenElseZero(won(k, 4), dy[k]);
                store(o, g1 + c1, std::false_type());
                for (size_t k = 0; k < K; ++k) {
                    if (!bottom_)
                        keep(hn::IfThenElseZero(won(k, 7), dy[k]), x0 + 1, k);
                    pend0[k] = hn::IfThenElseZero(won(k, 2), dy[k]);
                    pend1[k] = hn::IfThenElseZero(won(k, 5), dy[k]);
                    pend2[k] = hn::IfThenElseZero(won(k, 8), dy[k]);
                }
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
            const auto xe = static_cast<ptrdiff_t>(2 * OW - 1);
            if (xe < static_cast<ptrdiff_t>(W)) {
                const ptrdiff_t c = xe * gs[2];
                VF o[K];
                if (!top) {
                    for (size_t k = 0; k < K; ++k)
                        o[k] = hn::Add(carried(xe, k), pend0[k]);
                    store(o, g0 + c, std::true_type());
                }
                store(pend1, g1 + c, std::false_type());
                if (!bottom)
                    for (size_t k = 0; k < K; ++k)
                        keep(pend2[k], xe, k);
            }
        };
        size_t l = 0;
        for (; l + C <= lanes; l += C)
            run(l, std::true_type());
        if (l < lanes)
            run(l, std::false_type());
    }
    // The last window row's tap row 2, where it lies in the plane: nothing adds to it.
    if (2 * OH - 1 < H) {
        T* gl = gz + static_cast<ptrdiff_t>(2 * OH - 1) * gs[1];
        for (size_t x = 0; x < W; ++x)
            for (size_t l = 0; l < lanes; l += C) {
                VF o[K];
                for (size_t k = 0; k < K; ++k)
                    o[k] = hn::Load(d, carry + x * lp + l + k * N);
                Io::template Store<false, kFast ? kNoNaN : kAny>(
                        d, o, gl + static_cast<ptrdiff_t>(x) * gs[2] + static_cast<ptrdiff_t>(l),
                        std::min(C, lanes - l), false);
            }
    }
    return kFast && !(hn::AllFalse(d, seen) && hn::AllFalse(d, hn::IsNaN(owned)) &&
                      hn::AllFalse(d, hn::IsNaN(dsum)));
}

// stream: grad is large enough to bypass the caches; done where each whole chunk is a whole number
// of cache lines, aligned. Then src, read from memory too, is prefetched a window row ahead.
template <class Io, class D>
void Stride2By3Lanes(D d, const typename Io::T* src, const ptrdiff_t* ss,
                     const typename Io::T* diff, const ptrdiff_t* ys, typename Io::T* grad,
                     const ptrdiff_t* gs, size_t lanes, const PoolDims& g, bool stream) {
    using T = typename Io::T;
    const size_t C = Io::kVecs * hn::Lanes(d), lp = (lanes + C - 1) / C * C;
    constexpr size_t kLine = 64;
    auto lines = [&](ptrdiff_t elems) {
        return (elems * ptrdiff_t(sizeof(T))) % ptrdiff_t(kLine) == 0;
    };
    stream = stream && Io::kRounds && lines(ptrdiff_t(C)) &&
             reinterpret_cast<uintptr_t>(grad) % kLine == 0 && lines(gs[0]) && lines(gs[1]) &&
             lines(gs[2]);
    float* carry = AlignedIn(ThreadScratch().carry, g.in[2] * lp, HWY_MAX_BYTES);
    for (size_t z = 0; z < g.in[0]; ++z) {
        const auto* sz = src + static_cast<ptrdiff_t>(z) * ss[0];
        const auto* dz = diff + static_cast<ptrdiff_t>(z) * ys[0];
        auto* gz = grad + static_cast<ptrdiff_t>(z) * gs[0];
        if (Stride2By3Plane<true, Io>(d, sz, ss, dz, ys, gz, gs, lanes, g, carry, stream))
            Stride2By3Plane<false, Io>(d, sz, ss, dz, ys, gz, gs, lanes, g, carry, stream);
    }
    if (stream)
        hwy::FlushStream();
}

// 3x3/2 pad 1 on Io's type. Lanes a multiple of half a chunk but not of a chunk (blocks of 8 at
// AVX-512, 24 or 40 float32 channels; blocks of 16 bfloat16 at AVX-512): half vectors, all
// chunks whole, so that every window inside the plane takes the untested pass.
template <class Io>
void Stride2By3(const typename Io::T* src, const ptrdiff_t* ss, const typename Io::T* diff,
                const ptrdiff_t* ys, typename Io::T* grad, const ptrdiff_t* gs, size_t lanes,
                const PoolDims& g, bool stream) {
    const DF d;
#if HWY_TARGET != HWY_SCALAR
    const hn::Half<DF> dh;
    if (lanes % (Io::kVecs * hn::Lanes(d)) != 0 && lanes % (Io::kVecs * hn::Lanes(dh)) == 0)
        return Stride2By3Lanes<Io>(dh, src, ss, diff, ys, grad, gs, lanes, g, stream);
#endif
    Stride2By3Lanes<Io>(d, src, ss, diff, ys, grad, gs, lanes, g, stream);
}

bool IsStem(const PoolDims& g) {
    return g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 && g.s[2] == 2 && g.p[1] == 1 && g.p[2] == 1;
}

void MaxPoolLanesBackward(const float* src, const ptrdiff_t* ss, const float* diff,
                          const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                          const PoolDims& g) {
    const DF d;
    if (IsStem(g))
        return Stride2By3<F32Io>(src, ss, diff, ys, grad, gs, lanes, g, false);
    if (g.k[1] * g.k[2] == 4)
        return TiledLanes<4>(d, src, ss, diff, ys, grad, gs, lanes, g);
    TiledLanes<0>(d, src, ss, diff, ys, grad, gs, lanes, g);
}

void MaxPoolLanesBackwardBf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                              const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                              size_t lanes, const PoolDims& g, bool stream) {
    Stride2By3<Bf16Io>(src, ss, diff, ys, grad, gs, lanes, g, stream);
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

bool max_pool_lanes_backward_bf16_takes(const PoolDims& g) {
    return g.k[0] == 1 && g.s[0] == 1 && g.p[0] == 0 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 2 &&
           g.s[2] == 2 && g.p[1] == 1 && g.p[2] == 1;
}

HWY_EXPORT(MaxPoolLanesBackward);
HWY_EXPORT(MaxPoolLanesBackwardBf16);

void max_pool_lanes_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                             const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                             const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanesBackward)(src, ss, diff, ys, grad, gs, lanes, g);
}

void max_pool_lanes_backward_bf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                                  const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                                  size_t lanes, const PoolDims& g, bool stream) {
    HWY_DYNAMIC_DISPATCH(MaxPoolLanesBackwardBf16)(src, ss, diff, ys, grad, gs, lanes, g, stream);
}

}  // namespace neomeg::dnn::x86
#endif
