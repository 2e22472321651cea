// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/max_pool_rows_backward_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/x86/max_pool_rows_backward_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using MF = hn::Mask<DF>;
// A permutation of a vector's lanes (TableLookupLanes).
using IdxF = decltype(hn::SetTableIndices(DF(), static_cast<const int32_t*>(nullptr)));

// Each target's helpers are its own (other files have helpers of the same names).
namespace {

constexpr float kLowest = -std::numeric_limits<float>::infinity();
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
// float32 strips walk bands of this many window rows (16 src rows) down a plane: a strip walking
// the whole plane read src and wrote grad with strides the prefetchers did not follow (32x64x56x56
// from memory 3.1 -> 7.3 ms; 14 rows 8 ms), bands of 4 or 8 kept 3.5 ms; in cache 8 measured
// 0.154 ms against 0.149 for whole planes and 0.157 for 4 (2x64x56x56, one thread). So a call
// whose tensors lie in the caches (`cached`) walks whole planes: 0.1089 -> 0.1055 ms there.
constexpr size_t kBandRows = 8;

// Tap row r's (0, 1 or 2) gradient of a strip of windows, added into one src row's odd and even
// columns: odd column 2ox - 1 takes window ox - 1's tap column 2 (its winner `prev`, its gradient
// dyp) and then window ox's tap column 0, each where it won; even column 2ox window ox's tap
// column 1. odd and even hold the row's share so far (the window row above's, at tap row 0), or
// nothing (kFresh).
template <bool kFresh>
HWY_INLINE void TapRowGrad(DF d, VI win, VI prev, VF dy, VF dyp, int32_t r, VF& odd, VF& even) {
    const DI di;
    auto won = [&](VI w, int32_t k) { return hn::RebindMask(d, hn::Eq(w, hn::Set(di, k))); };
    // acc + v where `where` holds: one masked add, where a select and an add were two.
    auto add = [](MF where, VF acc, VF v) { return hn::IfThenElse(where, hn::Add(acc, v), acc); };
    if constexpr (kFresh) {
        odd = add(won(win, 3 * r), hn::IfThenElseZero(won(prev, 3 * r + 2), dyp), dy);
        even = hn::IfThenElseZero(won(win, 3 * r + 1), dy);
    } else {
        odd = add(won(win, 3 * r), add(won(prev, 3 * r + 2), odd, dyp), dy);
        even = add(won(win, 3 * r + 1), even, dy);
    }
}

// Lanes [lo, hi) of p (clamped to the vector), the others `fill`; no other lane's memory is
// touched, so p may point before a row whose first element is lane lo (masked loads on AVX2 and
// AVX-512, a buffer elsewhere).
HWY_INLINE VF LoadRange(DF d, const float* p, ptrdiff_t lo, ptrdiff_t hi, float fill) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    lo = std::clamp<ptrdiff_t>(lo, 0, n);
    hi = std::clamp<ptrdiff_t>(hi, lo, n);
#if HWY_TARGET <= HWY_AVX2
    const auto m = hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                              hn::FirstN(d, static_cast<size_t>(hi)));
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, fill));
#else
    HWY_ALIGN float tmp[kMaxLanes];
    for (ptrdiff_t i = 0; i < n; ++i)
        tmp[i] = i >= lo && i < hi ? p[i] : fill;
    return hn::Load(d, tmp);
#endif
}

// v's lanes [lo, hi) (clamped to the vector) to p; no other lane's memory is touched.
HWY_INLINE void StoreRange(VF v, DF d, float* p, ptrdiff_t lo, ptrdiff_t hi) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    lo = std::clamp<ptrdiff_t>(lo, 0, n);
    hi = std::clamp<ptrdiff_t>(hi, lo, n);
#if HWY_TARGET <= HWY_AVX2
    hn::BlendedStore(v,
                     hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                                hn::FirstN(d, static_cast<size_t>(hi))),
                     d, p);
#else
    HWY_ALIGN float tmp[kMaxLanes];
    hn::Store(v, d, tmp);
    for (ptrdiff_t i = lo; i < hi; ++i)
        p[i] = tmp[i];
#endif
}

#if HWY_TARGET <= HWY_AVX2
// The masks of an edge step's loads and stores (LoadRange's and StoreRange's lanes), which depend
// on the step's column alone: made once per call, where each row made them again (the clamps,
// mask moves and their spills were about a third of the loop's instructions on 56-wide planes,
// whose steps are all edges on AVX-512; 0.21 -> 0.19 ms for 2x64x56x56).
struct EdgeMasks {
    MF a0, b0, a1, b1;  // RowTaps' loads from columns c - 1, c - 1 + N, c, c + N
    MF dy, dyp;         // diff's windows ox0 + j and ox0 + j - 1
    MF lo, hi;          // StoreRow's two stores
};

HWY_INLINE MF RangeMask(DF d, ptrdiff_t lo, ptrdiff_t hi) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    lo = std::clamp<ptrdiff_t>(lo, 0, n);
    hi = std::clamp<ptrdiff_t>(hi, lo, n);
    return hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                      hn::FirstN(d, static_cast<size_t>(hi)));
}

// The masks of the step at windows [ox0, ox0 + N) in a plane W wide with OW windows per row.
HWY_INLINE EdgeMasks EdgeMasksAt(DF d, ptrdiff_t W, ptrdiff_t OW, ptrdiff_t ox0) {
    const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
    const ptrdiff_t c = 2 * ox0, first = c == 0 ? 1 : 0, end = W - c + 1;
    return {RangeMask(d, first, W - c + 1), RangeMask(d, 0, W - c + 1 - N),
            RangeMask(d, 0, W - c),         RangeMask(d, 0, W - c - N),
            RangeMask(d, 0, OW - ox0),      RangeMask(d, ox0 == 0 ? 1 : 0, OW - ox0 + 1),
            RangeMask(d, first, end),       RangeMask(d, first - N, end - N)};
}

HWY_INLINE VF LoadMasked(DF d, const float* p, MF m, float fill) {
    return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), hn::Set(d, fill));
}
#else
struct EdgeMasks {};  // other targets load and store edges through buffers
#endif

// The even and odd lanes of a's then b's values (LoadInterleaved2 of registers).
HWY_INLINE void Deinterleave(DF d, VF a, VF b, VF& even, VF& odd) {
#if HWY_TARGET == HWY_SCALAR
    (void)d;
    even = a;
    odd = b;
#else
    even = hn::ConcatEven(d, b, a);
    odd = hn::ConcatOdd(d, b, a);
#endif
}

// Each thread's buffers, kept between calls: the carry row's odd and even columns, and a row of
// -inf that stands for the padding rows; for bfloat16, staged src and grad rows and diff's row
// widened.
struct Scratch {
    std::vector<float> odd, even, lowest, dy;
    std::vector<uint16_t> staged;
    std::vector<float> best;
    std::vector<int32_t> moved, idx;
};

Scratch& ThreadScratch() {
    thread_local Scratch s;
    return s;
}

// The taps of windows [c / 2, c / 2 + N) in one src row of W columns: t0 column 2ox - 1, t1 2ox,
// t2 2ox + 1. FULL: columns [c - 1, c + 2N) all lie in the row; otherwise the columns outside it
// read -inf (padding, which the winner's chain never takes).
template <bool FULL>
HWY_INLINE void RowTaps(DF d, const float* row, ptrdiff_t W, ptrdiff_t c, VF& t0, VF& t1, VF& t2,
                        const EdgeMasks* em) {
#if HWY_TARGET <= HWY_AVX2
    if (!FULL && em) {
        const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
        VF unused;
        Deinterleave(d, LoadMasked(d, row + c - 1, em->a0, kLowest),
                     LoadMasked(d, row + c - 1 + N, em->b0, kLowest), t0, unused);
        Deinterleave(d, LoadMasked(d, row + c, em->a1, kLowest),
                     LoadMasked(d, row + c + N, em->b1, kLowest), t1, t2);
        return;
    }
#else
    (void)em;
#endif
    if constexpr (FULL) {
        VF unused;
        hn::LoadInterleaved2(d, row + c - 1, t0, unused);
        hn::LoadInterleaved2(d, row + c, t1, t2);
    } else {
        const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
        const ptrdiff_t first = c == 0 ? 1 : 0;  // column -1 is padding
        const VF a0 = LoadRange(d, row + c - 1, first, W - c + 1, kLowest);
        const VF b0 = LoadRange(d, row + c - 1 + N, 0, W - c + 1 - N, kLowest);
        VF unused;
        Deinterleave(d, a0, b0, t0, unused);
        const VF a1 = LoadRange(d, row + c, 0, W - c, kLowest);
        const VF b1 = LoadRange(d, row + c + N, 0, W - c - N, kLowest);
        Deinterleave(d, a1, b1, t1, t2);
    }
}

// RowTaps' t1 and t2 alone (the strips make t0 from t2, one lane on). kZeroPast: the columns
// past the row read 0, not -inf (masked loads without a blend): for rows of even width, whose
// columns past the row belong to windows past OW alone (their gradient is 0, and window OW's,
// where it exists, only adds a tap column 0 of no gradient).
template <bool FULL, bool kZeroPast = false>
HWY_INLINE void RowTaps12(DF d, const float* row, ptrdiff_t W, ptrdiff_t c, VF& t1, VF& t2,
                          const EdgeMasks* em) {
#if HWY_TARGET <= HWY_AVX2
    if (!FULL && em) {
        const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
        if constexpr (kZeroPast)
            Deinterleave(d, hn::MaskedLoad(em->a1, d, row + c),
                         hn::MaskedLoad(em->b1, d, row + c + N), t1, t2);
        else
            Deinterleave(d, LoadMasked(d, row + c, em->a1, kLowest),
                         LoadMasked(d, row + c + N, em->b1, kLowest), t1, t2);
        return;
    }
#else
    (void)em;
#endif
    if constexpr (FULL) {
        hn::LoadInterleaved2(d, row + c, t1, t2);
    } else {
        const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
        Deinterleave(d, LoadRange(d, row + c, 0, W - c, kLowest),
                     LoadRange(d, row + c + N, 0, W - c - N, kLowest), t1, t2);
    }
}

// Columns [c - 1, c - 1 + 2N) of a grad row, odd and even interleaved (odd lane j is column
// c - 1 + 2j, even lane j column c + 2j); FULL: all of them lie in the row, otherwise only those
// in [0, W) are written. `pairs` puts lanes 2k, 2k + 1, N/2 + 2k, N/2 + 2k + 1 in 128-bit block k,
// so that the interleave within blocks (unpcklps, unpckhps) gives the columns in order: two lane
// permutations where StoreInterleaved2 moves whole blocks four times.
template <bool FULL>
HWY_INLINE void StoreRow(DF d, const IdxF& pairs, VF odd, VF even, float* row, ptrdiff_t W,
                         ptrdiff_t c, const EdgeMasks* em = nullptr) {
    const auto N = static_cast<ptrdiff_t>(hn::Lanes(d));
    VF lo, hi;
#if HWY_TARGET == HWY_SCALAR
    (void)pairs;
    lo = odd;
    hi = even;
#else
    if (N > 4) {
        odd = hn::TableLookupLanes(odd, pairs);
        even = hn::TableLookupLanes(even, pairs);
    }
    lo = hn::InterleaveLower(d, odd, even);
    hi = hn::InterleaveUpper(d, odd, even);
#endif
#if HWY_TARGET <= HWY_AVX2
    if (!FULL && em) {
        hn::BlendedStore(lo, em->lo, d, row + c - 1);
        hn::BlendedStore(hi, em->hi, d, row + c - 1 + N);
        return;
    }
#else
    (void)em;
#endif
    if constexpr (FULL) {
        hn::StoreU(lo, d, row + c - 1);
        hn::StoreU(hi, d, row + c - 1 + N);
    } else {
        const ptrdiff_t first = c == 0 ? 1 : 0, end = W - c + 1;
        StoreRange(lo, d, row + c - 1, first, end);
        StoreRange(hi, d, row + c - 1 + N, first - N, end - N);
    }
}

constexpr uint16_t kLowest16 = 0xFF80;  // bfloat16's -inf

float Widen(float v) {
    return v;
}

float Widen(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// bfloat16 rows are staged (column x at row[x], -inf at columns -2 and -1 and past the row, so
// that every load is a whole vector) and read as 32-bit lanes, each a pair of columns: the even
// column widens by a shift, the odd one by a mask, and no lanes move.
HWY_INLINE void RowTaps16(DF d, const uint16_t* row, ptrdiff_t c, VF& t0, VF& t1, VF& t2) {
#if HWY_TARGET == HWY_SCALAR
    t0 = hn::Set(d, Widen(row[c - 1]));
    t1 = hn::Set(d, Widen(row[c]));
    t2 = hn::Set(d, Widen(row[c + 1]));
#else
    const hn::RebindToUnsigned<DF> du;
    const hn::Repartition<uint16_t, DF> d16;
    const auto high = hn::Set(du, 0xFFFF0000u);
    const auto p = hn::BitCast(du, hn::LoadU(d16, row + c));      // columns c + 2j, c + 2j + 1
    const auto q = hn::BitCast(du, hn::LoadU(d16, row + c - 2));  // c - 2 + 2j, c - 1 + 2j
    t0 = hn::BitCast(d, hn::And(q, high));
    t1 = hn::BitCast(d, hn::ShiftLeft<16>(p));
    t2 = hn::BitCast(d, hn::And(p, high));
#endif
}

// float32 to bfloat16 as naive converts (Eigen: round to nearest even, a NaN to a quiet NaN keeping
// its sign), the bits in each lane's upper half.
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundToBf16(VF v) {
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::BitCast(du, v);
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), odd));
    const auto nan = hn::Or(hn::And(u, hn::Set(du, 0x80000000u)), hn::Set(du, 0x7FC00000u));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded);
}

// Columns [c - 1, c - 1 + 2N) of a staged bfloat16 grad row (column x at row[x]), odd lane j
// column c - 1 + 2j and even lane j column c + 2j: each 32-bit lane one pair, no lanes moved.
HWY_INLINE void StoreRow16(DF d, VF odd, VF even, uint16_t* row, ptrdiff_t c) {
#if HWY_TARGET == HWY_SCALAR
    (void)d;
    row[c - 1] = static_cast<uint16_t>(hn::GetLane(RoundToBf16(odd)) >> 16);
    row[c] = static_cast<uint16_t>(hn::GetLane(RoundToBf16(even)) >> 16);
#else
    const hn::RebindToUnsigned<DF> du;
    const hn::Repartition<uint16_t, DF> d16;
    const auto pair = hn::Or(hn::ShiftRight<16>(RoundToBf16(odd)),
                             hn::And(RoundToBf16(even), hn::Set(du, 0xFFFF0000u)));
    hn::StoreU(hn::BitCast(d16, pair), d16, row + c - 1);
#endif
}

// The winners of windows [ox0, ox0 + n) of window row oy by naive's rule (a NaN wins, the first
// of them; padding never counts), as tap numbers ky * 3 + kx; the lanes past n get 0.
template <class T>
VI NaiveWinners(DI di, const T* s, ptrdiff_t rs, size_t H, size_t W, size_t oy, size_t ox0,
                size_t n) {
    HWY_ALIGN int32_t w[kMaxLanes] = {};
    const ptrdiff_t y0 = 2 * static_cast<ptrdiff_t>(oy) - 1;
    for (size_t j = 0; j < n; ++j) {
        const ptrdiff_t x0 = 2 * static_cast<ptrdiff_t>(ox0 + j) - 1;
        int32_t best_at = -1;
        float best = 0.f;
        for (ptrdiff_t y = std::max<ptrdiff_t>(y0, 0);
             y < std::min(y0 + 3, static_cast<ptrdiff_t>(H)); ++y)
            for (ptrdiff_t x = std::max<ptrdiff_t>(x0, 0);
                 x < std::min(x0 + 3, static_cast<ptrdiff_t>(W)); ++x) {
                const float v = Widen(s[y * rs + x]);
                if (best_at < 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
                    best = v;
                    best_at = static_cast<int32_t>((y - y0) * 3 + (x - x0));
                }
            }
        w[j] = best_at;
    }
    return hn::Load(di, w);
}

// T: float, or uint16_t for bfloat16's bits (compared and summed as float32, exactly; each
// element's sum rounded to bfloat16 once).
template <class T>
void RowsBackward(const T* src, const ptrdiff_t* ss, const T* diff, const ptrdiff_t* ys, T* grad,
                  const ptrdiff_t* gs, const PoolDims& g, bool cached) {
    constexpr bool kBf16 = std::is_same_v<T, uint16_t>;
    const DF d;
    const DI di;
    const size_t N = hn::Lanes(d);
    const size_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    const auto sW = static_cast<ptrdiff_t>(W);
    // Column 2 OW - 1, where it lies in the row, takes only the last window's tap column 2: a
    // window OW of no gradient makes it in the vector loop like the other odd columns.
    const size_t OV = OW + (2 * OW - 1 < W ? 1 : 0);
    Scratch& sc = ThreadScratch();
    sc.odd.resize(OV + N);
    sc.even.resize(OV + N);
    if (sc.lowest.size() < W + 2 * N + 2)
        sc.lowest.assign(W + 2 * N + 2, kLowest);
    if constexpr (!kBf16) {
        sc.moved.resize(OH * N);
        sc.best.resize(OV + N);
        sc.idx.resize(OV + N);
    }
    float* carry_odd = sc.odd.data();
    float* carry_even = sc.even.data();
    const float* lowest = sc.lowest.data() + 1;
    // bfloat16: staged rows of `len` columns from column -2 (three src slots, one of -inf, two
    // grad rows), whole vectors up to column 2 OVp + 2N; diff's row widened, 0 at -1 and past OW.
    const size_t OVp = (OV + N - 1) / N * N, len = kBf16 ? 2 * OVp + 2 * N + 4 : 0;
    uint16_t* staged = nullptr;
    float* dys = nullptr;
    if constexpr (kBf16) {
        sc.staged.assign(6 * len, kLowest16);
        staged = sc.staged.data();
        sc.dy.assign(OVp + N + 1, 0.f);
        dys = sc.dy.data() + 1;
    }
    HWY_ALIGN int32_t rotate[kMaxLanes] = {};
    for (size_t j = 0; j < N; ++j)
        rotate[j] = static_cast<int32_t>((j + N - 1) % N);
    const auto to_next = hn::SetTableIndices(di, rotate);  // lane j from lane j - 1
    const IdxF to_next_f = hn::SetTableIndices(d, rotate);
    const MF first_lane = hn::FirstN(d, 1);
    const VI first_col = hn::IfThenElseZero(hn::FirstN(di, 1), hn::Set(di, 1));
    HWY_ALIGN int32_t pair_order[kMaxLanes] = {};
    for (size_t j = 0; j < N; ++j) {
        const size_t k = j / 4, i = j % 4;
        pair_order[j] = static_cast<int32_t>(i < 2 ? 2 * k + i : N / 2 + 2 * k + i - 2);
    }
    const IdxF pairs = hn::SetTableIndices(d, pair_order);
    const VF zero = hn::Zero(d);
    // Each step's edge masks, made once (steps past kEdgeSteps make theirs as they go).
    constexpr size_t kEdgeSteps = 16;
    EdgeMasks edges[kEdgeSteps];
    bool have_masks = false;
#if HWY_TARGET <= HWY_AVX2
    if constexpr (!kBf16) {
        have_masks = true;
        for (size_t i = 0; i < kEdgeSteps && i * N < OV; ++i)
            edges[i] =
                    EdgeMasksAt(d, sW, static_cast<ptrdiff_t>(OW), static_cast<ptrdiff_t>(i * N));
    }
#endif
    // kFast: no step tests its taps for NaN (ten operations of a step's hundred); each adds the
    // four elements whose windows it alone holds (tap rows 1 and 2, columns 1 and 2: every
    // element's own window) into `owned`, which a NaN turns into NaN, and the plane then runs
    // again with every step tested (which rewrites all of its grad). +inf with -inf among those
    // elements does the same, exactly, only slower.
    auto plane = [&](size_t z, auto fast) {
        constexpr bool kFast = decltype(fast)::value;
        VF owned = zero;
        const T* sz = src + static_cast<ptrdiff_t>(z) * ss[0];
        const T* dz = diff + static_cast<ptrdiff_t>(z) * ys[0];
        T* gz = grad + static_cast<ptrdiff_t>(z) * gs[0];
        for (size_t oy = 0; oy < OH; ++oy) {
            const bool top = oy == 0, bottom = 2 * oy + 1 >= H;
            const float* rows[3] = {};
            const uint16_t* rows16[3] = {};
            for (ptrdiff_t r = 0; r < 3; ++r) {
                const ptrdiff_t y = 2 * static_cast<ptrdiff_t>(oy) - 1 + r;
                const bool pad = y < 0 || y >= static_cast<ptrdiff_t>(H);
                if constexpr (kBf16) {
                    // Rows 2oy and 2oy + 1 staged in slot y % 3; 2oy - 1 was, for the window
                    // row before.
                    uint16_t* slot = staged + (pad ? 3 : y % 3) * static_cast<ptrdiff_t>(len) + 2;
                    if (!pad && (r > 0 || oy == 0))
                        std::memcpy(slot, sz + y * ss[1], W * sizeof(uint16_t));
                    rows16[r] = slot;
                } else {
                    rows[r] = pad ? lowest : sz + y * ss[1];
                }
            }
            T* g1 = gz + 2 * static_cast<ptrdiff_t>(oy) * gs[1];
            T* g0 = g1 - gs[1];  // used when !top
            const T* dyrow = dz + static_cast<ptrdiff_t>(oy) * ys[1];
            uint16_t* staged_g0 = staged + 4 * static_cast<ptrdiff_t>(len) + 2;
            uint16_t* staged_g1 = staged_g0 + len;
            if constexpr (kBf16) {
                // + 0: naive's sum of a -0 gradient is +0.
                for (size_t x = 0; x < OW; ++x)
                    dys[x] = Widen(dyrow[x]) + 0.f;
            }
            const auto sOW = static_cast<ptrdiff_t>(OW);
            VI moved_before = hn::Zero(di);
            auto step = [&](size_t ox0, auto full) {
                constexpr bool kFull = decltype(full)::value;
                const auto sx = static_cast<ptrdiff_t>(ox0), c = 2 * sx;
                const EdgeMasks* em =
                        ox0 / N < kEdgeSteps && have_masks ? &edges[ox0 / N] : nullptr;
                VF t[9];
                for (size_t r = 0; r < 3; ++r) {
                    if constexpr (kBf16)
                        RowTaps16(d, rows16[r], c, t[3 * r], t[3 * r + 1], t[3 * r + 2]);
                    else
                        RowTaps<kFull>(d, rows[r], sW, c, t[3 * r], t[3 * r + 1], t[3 * r + 2], em);
                }
                // The first maximum by naive's `>` in row-major order (a -0/+0 tie keeps the
                // first zero; padding reads -inf and is never taken): each row's first maximum,
                // then the rows' in order, so that no chain of compares is longer than two.
                // Window 0's tap column 0 is padding: its row starts at column 1.
                const VI left = !kFull && ox0 == 0 ? first_col : hn::Zero(di);
                VF best[3];
                VI idx[3];
                for (size_t r = 0; r < 3; ++r) {
                    best[r] = t[3 * r];
                    idx[r] = hn::Add(left, hn::Set(di, static_cast<int32_t>(3 * r)));
                    for (size_t k = 1; k < 3; ++k) {
                        const auto take = hn::Gt(t[3 * r + k], best[r]);
                        best[r] = hn::IfThenElse(take, t[3 * r + k], best[r]);
                        idx[r] = hn::IfThenElse(hn::RebindMask(di, take),
                                                hn::Set(di, static_cast<int32_t>(3 * r + k)),
                                                idx[r]);
                    }
                }
                // At the top, row 0 is padding: the rows start at row 1.
                VF m = top ? best[1] : best[0];
                VI win = top ? idx[1] : idx[0];
                for (size_t r = 1; r < 3; ++r) {
                    const auto take = hn::Gt(best[r], m);
                    m = hn::IfThenElse(take, best[r], m);
                    win = hn::IfThenElse(hn::RebindMask(di, take), idx[r], win);
                }
                // The chain skips NaNs: a NaN among the taps makes their sum one (as do +inf
                // and -inf together, harmlessly), and those windows take naive's rule.
                if constexpr (kFast) {
                    owned = hn::Add(owned, hn::Add(hn::Add(t[4], t[5]), hn::Add(t[7], t[8])));
                } else {
                    const VF sum =
                            hn::Add(hn::Add(hn::Add(hn::Add(t[0], t[1]), hn::Add(t[2], t[3])),
                                            hn::Add(hn::Add(t[4], t[5]), hn::Add(t[6], t[7]))),
                                    t[8]);
                    if (HWY_UNLIKELY(!hn::AllFalse(d, hn::IsNaN(sum))))
                        win = NaiveWinners(di, sz, ss[1], H, W, oy, ox0,
                                           ox0 < OW ? std::min(N, OW - ox0) : 0);
                }
                // Window ox - 1's winner in lane ox (the lane before's, across vectors).
                const VI moved = hn::TableLookupLanes(win, to_next);
                const VI prev = hn::IfThenElse(hn::RebindMask(di, first_lane), moved_before, moved);
                moved_before = moved;
                // + 0: naive's sum of a -0 gradient is +0. Windows past OW have no gradient.
                VF dy, dyp;
                if constexpr (kBf16) {
                    dy = hn::LoadU(d, dys + sx);
                    dyp = hn::LoadU(d, dys + sx - 1);
                } else {
#if HWY_TARGET <= HWY_AVX2
                    if (!kFull && em) {
                        dy = hn::Add(LoadMasked(d, dyrow + sx, em->dy, 0.f), zero);
                        dyp = hn::Add(LoadMasked(d, dyrow + sx - 1, em->dyp, 0.f), zero);
                    } else
#endif
                    {
                        dy = hn::Add(kFull ? hn::LoadU(d, dyrow + sx)
                                           : LoadRange(d, dyrow + sx, 0, sOW - sx, 0.f),
                                     zero);
                        dyp = hn::Add(kFull ? hn::LoadU(d, dyrow + sx - 1)
                                            : LoadRange(d, dyrow + sx - 1, ox0 == 0 ? 1 : 0,
                                                        sOW - sx + 1, 0.f),
                                      zero);
                    }
                }
                auto store = [&](VF odd, VF even, T* row, uint16_t* staged_row) {
                    if constexpr (kBf16)
                        StoreRow16(d, odd, even, staged_row, c);
                    else
                        StoreRow<kFull>(d, pairs, odd, even, row, sW, c, em);
                };
                float* co = carry_odd + ox0;
                float* ce = carry_even + ox0;
                // Row 2oy - 1: window row oy - 1's share (the carry), then this one's.
                VF odd, even;
                if (!top) {
                    odd = hn::LoadU(d, co);
                    even = hn::LoadU(d, ce);
                    TapRowGrad<false>(d, win, prev, dy, dyp, 0, odd, even);
                    store(odd, even, g0, staged_g0);
                }
                TapRowGrad<true>(d, win, prev, dy, dyp, 1, odd, even);
                store(odd, even, g1, staged_g1);
                if (!bottom) {
                    TapRowGrad<true>(d, win, prev, dy, dyp, 2, odd, even);
                    hn::StoreU(odd, d, co);
                    hn::StoreU(even, d, ce);
                }
            };
            for (size_t ox0 = 0; ox0 < OV; ox0 += N) {
                if (ox0 > 0 && ox0 + N <= OW && 2 * (ox0 + N) <= W)
                    step(ox0, std::true_type());
                else
                    step(ox0, std::false_type());
            }
            if constexpr (kBf16) {
                if (!top)
                    std::memcpy(g0, staged_g0, W * sizeof(uint16_t));
                std::memcpy(g1, staged_g1, W * sizeof(uint16_t));
            }
        }
        // Row 2 OH - 1, where it lies in the plane: the last window row's tap row 2 alone.
        if (2 * OH - 1 < H) {
            T* row = gz + static_cast<ptrdiff_t>(2 * OH - 1) * gs[1];
            for (size_t ox0 = 0; ox0 < OV; ox0 += N) {
                const VF odd = hn::LoadU(d, carry_odd + ox0), even = hn::LoadU(d, carry_even + ox0);
                const auto c = 2 * static_cast<ptrdiff_t>(ox0);
                if constexpr (kBf16)
                    StoreRow16(d, odd, even, staged + 4 * static_cast<ptrdiff_t>(len) + 2, c);
                else if (ox0 > 0 && 2 * (ox0 + N) <= W)
                    StoreRow<true>(d, pairs, odd, even, row, sW, c);
                else
                    StoreRow<false>(d, pairs, odd, even, row, sW, c);
            }
            if constexpr (kBf16)
                std::memcpy(row, staged + 4 * static_cast<ptrdiff_t>(len) + 2,
                            W * sizeof(uint16_t));
        }
        return kFast && !hn::AllFalse(d, hn::IsNaN(owned));
    };
    // float32's untested pass walks each strip of N windows down a band of kBandRows window rows
    // (bands outer, strips, then window rows), so that a window row's tap row 2 (its taps' row
    // maxima and their indices) is the next one's tap row 0 and grad row 2oy + 1 stays in
    // registers until window row oy + 1 adds its share: each src row is loaded and split into
    // even and odd columns once where the row order split row 2oy - 1 twice, and the carry row
    // goes to memory once a band (with the row maxima). Window ox0 - 1's winner, in the strip
    // before, comes from `moved_rows` (one vector per window row).
    auto columns = [&](size_t z) {
        VF owned = zero;
        const float* sz = reinterpret_cast<const float*>(src) + static_cast<ptrdiff_t>(z) * ss[0];
        const float* dz = reinterpret_cast<const float*>(diff) + static_cast<ptrdiff_t>(z) * ys[0];
        float* gz = reinterpret_cast<float*>(grad) + static_cast<ptrdiff_t>(z) * gs[0];
        int32_t* moved_rows = sc.moved.data();
        float* band_best = sc.best.data();
        int32_t* band_idx = sc.idx.data();
        const auto sOW = static_cast<ptrdiff_t>(OW);
        // kFull: the strip's loads and stores lie in the rows; kMasked: edge masks made (`m`,
        // a copy the compiler keeps in registers); neither: LoadRange's buffers.
        auto strip = [&](size_t ox0, auto full, auto masked, auto zero_past, const EdgeMasks* m,
                         size_t oy0, size_t oy1) {
            constexpr bool kFull = decltype(full)::value;
            constexpr bool kMasked = decltype(masked)::value;
            constexpr bool kZeroPast = decltype(zero_past)::value;
            EdgeMasks local{};
            if constexpr (kMasked)
                local = *m;
            const EdgeMasks* em = kMasked ? &local : nullptr;
            const auto sx = static_cast<ptrdiff_t>(ox0), c = 2 * sx;
            const VI left = !kFull && ox0 == 0 ? first_col : hn::Zero(di);
            const VI six = hn::Set(di, 6);
            const ptrdiff_t s1 = ss[1], y1 = ys[1], g1s = gs[1];
            // The row maxima of window row oy - 1's tap row 2, as tap row 0 of row oy.
            // A band after the first takes them, and the carry row, from the band before.
            VF best0 = zero;
            VI idx0 = hn::Zero(di);
            VF carry_o = zero, carry_e = zero;
            // The strip's own NaN sum: `owned`, captured by reference, went through memory
            // every window row.
            VF own = zero;
            if (oy0 > 0) {
                best0 = hn::LoadU(d, band_best + ox0);
                idx0 = hn::LoadU(di, band_idx + ox0);
                carry_o = hn::LoadU(d, carry_odd + ox0);
                carry_e = hn::LoadU(d, carry_even + ox0);
            }
            const auto soy0 = static_cast<ptrdiff_t>(oy0);
            const float* r1 = sz + 2 * soy0 * s1;
            const float* dyrow = dz + sx + soy0 * y1;
            float* g1 = gz + 2 * soy0 * g1s;  // row 2oy
            int32_t* mrow = moved_rows + oy0 * N;
            for (size_t oy = oy0; oy < oy1;
                 ++oy, r1 += 2 * s1, dyrow += y1, g1 += 2 * g1s, mrow += N) {
                const bool top = oy == 0, bottom = 2 * oy + 1 >= H;
                const float* r2 = bottom ? lowest : r1 + s1;
                VF t[6];
                // Tap column 0 (column 2ox - 1) is window ox - 1's tap column 2: t2 one lane
                // on, lane 0 column c - 1 itself (padding in the first strip).
                for (size_t r = 0; r < 2; ++r) {
                    const float* row = r == 0 ? r1 : r2;
                    RowTaps12<kFull, kZeroPast>(d, row, sW, c, t[3 * r + 1], t[3 * r + 2], em);
                    t[3 * r] =
                            hn::IfThenElse(first_lane, hn::Set(d, ox0 == 0 ? kLowest : row[c - 1]),
                                           hn::TableLookupLanes(t[3 * r + 2], to_next_f));
                }
                VF best[2];
                VI idx[2];
                for (size_t r = 0; r < 2; ++r) {
                    best[r] = t[3 * r];
                    idx[r] = hn::Add(left, hn::Set(di, static_cast<int32_t>(3 * r + 3)));
                    for (size_t k = 1; k < 3; ++k) {
                        const auto take = hn::Gt(t[3 * r + k], best[r]);
                        best[r] = hn::IfThenElse(take, t[3 * r + k], best[r]);
                        idx[r] = hn::IfThenElse(hn::RebindMask(di, take),
                                                hn::Set(di, static_cast<int32_t>(3 * r + 3 + k)),
                                                idx[r]);
                    }
                }
                VF mx = top ? best[0] : best0;
                VI win = top ? idx[0] : idx0;
                if (!top) {
                    const auto take = hn::Gt(best[0], mx);
                    mx = hn::IfThenElse(take, best[0], mx);
                    win = hn::IfThenElse(hn::RebindMask(di, take), idx[0], win);
                }
                win = hn::IfThenElse(hn::RebindMask(di, hn::Gt(best[1], mx)), idx[1], win);
                best0 = best[1];
                idx0 = hn::Sub(idx[1], six);
                own = hn::Add(own, hn::Add(hn::Add(t[1], t[2]), hn::Add(t[4], t[5])));
                const VI moved = hn::TableLookupLanes(win, to_next);
                const VI prev =
                        hn::IfThenElse(hn::RebindMask(di, first_lane),
                                       ox0 == 0 ? hn::Zero(di) : hn::LoadU(di, mrow), moved);
                hn::StoreU(moved, di, mrow);
                VF dy, dyp;
#if HWY_TARGET <= HWY_AVX2
                if constexpr (kMasked) {
                    // MaskedLoad's other lanes are 0 already.
                    dy = hn::Add(hn::MaskedLoad(em->dy, d, dyrow), zero);
                    dyp = hn::Add(hn::MaskedLoad(em->dyp, d, dyrow - 1), zero);
                } else
#endif
                {
                    dy = hn::Add(
                            kFull ? hn::LoadU(d, dyrow) : LoadRange(d, dyrow, 0, sOW - sx, 0.f),
                            zero);
                    dyp = hn::Add(
                            kFull ? hn::LoadU(d, dyrow - 1)
                                  : LoadRange(d, dyrow - 1, ox0 == 0 ? 1 : 0, sOW - sx + 1, 0.f),
                            zero);
                }
                if (!top) {
                    TapRowGrad<false>(d, win, prev, dy, dyp, 0, carry_o, carry_e);
                    StoreRow<kFull>(d, pairs, carry_o, carry_e, g1 - g1s, sW, c, em);
                }
                VF odd, even;
                TapRowGrad<true>(d, win, prev, dy, dyp, 1, odd, even);
                StoreRow<kFull>(d, pairs, odd, even, g1, sW, c, em);
                TapRowGrad<true>(d, win, prev, dy, dyp, 2, carry_o, carry_e);
            }
            owned = hn::Add(owned, own);
            if (oy1 < OH) {
                hn::StoreU(best0, d, band_best + ox0);
                hn::StoreU(idx0, di, band_idx + ox0);
                hn::StoreU(carry_o, d, carry_odd + ox0);
                hn::StoreU(carry_e, d, carry_even + ox0);
            } else if (2 * OH - 1 < H) {
                // Row 2 OH - 1, in the plane: the last window row's tap row 2 alone.
                StoreRow<kFull>(d, pairs, carry_o, carry_e,
                                gz + static_cast<ptrdiff_t>(2 * OH - 1) * gs[1], sW, c, em);
            }
        };
        const size_t band = cached ? OH : kBandRows;
        for (size_t oy0 = 0; oy0 < OH; oy0 += band) {
            const size_t oy1 = std::min(OH, oy0 + band);
            for (size_t ox0 = 0; ox0 < OV; ox0 += N) {
                const EdgeMasks* em =
                        ox0 / N < kEdgeSteps && have_masks ? &edges[ox0 / N] : nullptr;
                if (ox0 > 0 && ox0 + N <= OW && 2 * (ox0 + N) <= W)
                    strip(ox0, std::true_type(), std::false_type(), std::false_type(), nullptr, oy0,
                          oy1);
                else if (em && W % 2 == 0)
                    strip(ox0, std::false_type(), std::true_type(), std::true_type(), em, oy0, oy1);
                else if (em)
                    strip(ox0, std::false_type(), std::true_type(), std::false_type(), em, oy0,
                          oy1);
                else
                    strip(ox0, std::false_type(), std::false_type(), std::false_type(), nullptr,
                          oy0, oy1);
            }
        }
        return !hn::AllFalse(d, hn::IsNaN(owned));
    };
    for (size_t z = 0; z < g.in[0]; ++z) {
        bool nan;
        if constexpr (kBf16)
            nan = plane(z, std::true_type());
        else
            nan = columns(z);
        if (nan)
            plane(z, std::false_type());
    }
}

}  // namespace

void MaxPoolRowsBackward(const float* src, const ptrdiff_t* ss, const float* diff,
                         const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, const PoolDims& g,
                         bool cached) {
    RowsBackward(src, ss, diff, ys, grad, gs, g, cached);
}

void MaxPoolRowsBackwardBf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                             const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                             const PoolDims& g) {
    RowsBackward(src, ss, diff, ys, grad, gs, g, false);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

bool max_pool_rows_backward_takes(const PoolDims& g) {
    if (g.k[0] != 1 || g.s[0] != 1 || g.p[0] != 0 || g.out[0] != g.in[0])
        return false;
    for (size_t a = 1; a < 3; ++a)
        if (g.k[a] != 3 || g.s[a] != 2 || g.p[a] != 1 || g.in[a] == 0 ||
            g.out[a] != (g.in[a] - 1) / 2 + 1)
            return false;
    return true;
}

HWY_EXPORT(MaxPoolRowsBackward);

void max_pool_rows_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                            const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs,
                            const PoolDims& g, bool cached) {
    HWY_DYNAMIC_DISPATCH(MaxPoolRowsBackward)(src, ss, diff, ys, grad, gs, g, cached);
}

HWY_EXPORT(MaxPoolRowsBackwardBf16);

void max_pool_rows_backward_bf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                                 const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                                 const PoolDims& g) {
    HWY_DYNAMIC_DISPATCH(MaxPoolRowsBackwardBf16)(src, ss, diff, ys, grad, gs, g);
}

}  // namespace neomeg::dnn::x86
#endif
