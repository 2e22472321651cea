// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_grad_data_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "src/x86/depthwise_grad_data_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET <= HWY_AVX2
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;

constexpr size_t kMaxKw = 16;
// Vectors of a phase per interior block: with two phases, four independent accumulators.
constexpr size_t kVecs = 2;

using Tap = DwGatherTaps::Tap;

// One row's taps of one phase: [b, e) of the call's list.
struct PhaseTaps {
    const Tap* b;
    const Tap* e;
};

// Lanes l whose diff column c0 + l lies in [0, ow).
HWY_INLINE MF ColumnsIn(DF d, ptrdiff_t c0, size_t ow) {
    const auto n = static_cast<ptrdiff_t>(hn::Lanes(d));
    ptrdiff_t lo = std::clamp<ptrdiff_t>(-c0, 0, n);
    ptrdiff_t hi = std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(ow) - c0, 0, n);
    return hn::AndNot(hn::FirstN(d, static_cast<size_t>(lo)),
                      hn::FirstN(d, static_cast<size_t>(hi)));
}

// V vectors of every phase from phase column q0, interleaved into dx's row o (SW * q0 on): an
// interior block reads only diff's columns and writes whole vectors; an edge block (V == 1)
// masks its loads to diff's row (m: per offset c - cmin, the lanes whose column is inside) and
// writes `count` columns of dx.
// One phase's sums over its taps into a0 (and a1 for V == 2), locals of the caller so that
// they stay in registers.
template <size_t V, bool kEdge>
HWY_INLINE void PhaseSum(DF d, PhaseTaps pt, const float* dy, const float* w, const MF* m,
                         size_t q0, VF& a0, VF& a1) {
    const size_t N = hn::Lanes(d);
    a0 = hn::Zero(d);
    a1 = hn::Zero(d);
    for (const Tap* t = pt.b; t != pt.e; ++t) {
        const VF wv = hn::Set(d, w[t->wi]);
        const float* s = dy + t->off + static_cast<ptrdiff_t>(q0);
        if constexpr (kEdge) {
            a0 = hn::MulAdd(wv, hn::MaskedLoad(m[t->ci], d, s), a0);
        } else {
            a0 = hn::MulAdd(wv, hn::LoadU(d, s), a0);
            if constexpr (V > 1)
                a1 = hn::MulAdd(wv, hn::LoadU(d, s + N), a1);
        }
    }
}

// V (1 or 2) vectors of every phase from phase column q0, interleaved into dx's row o (SW * q0
// on): an interior block reads only diff's columns and writes whole vectors; an edge block
// (V == 1) masks its loads to diff's row (m: per offset c - cmin, the lanes whose column is
// inside) and writes `count` columns of dx.
template <size_t SW, size_t V, bool kEdge>
HWY_INLINE void Block(DF d, const PhaseTaps* taps, const float* dy, const float* w, const MF* m,
                      size_t q0, float* o, size_t count) {
    const size_t N = hn::Lanes(d);
    VF a0, a1, b0, b1;
    PhaseSum<V, kEdge>(d, taps[0], dy, w, m, q0, a0, a1);
    if constexpr (SW == 1) {
        if (kEdge && count < N) {
            hn::BlendedStore(a0, hn::FirstN(d, count), d, o);
            return;
        }
        hn::StoreU(a0, d, o);
        if constexpr (V > 1)
            hn::StoreU(a1, d, o + N);
        return;
    } else {
        PhaseSum<V, kEdge>(d, taps[1], dy, w, m, q0, b0, b1);
        if constexpr (!kEdge) {
            hn::StoreInterleaved2(a0, b0, d, o);
            if constexpr (V > 1)
                hn::StoreInterleaved2(a1, b1, d, o + 2 * N);
        } else {
            HWY_ALIGN float tmp[2 * HWY_MAX_BYTES / sizeof(float)];
            hn::StoreInterleaved2(a0, b0, d, tmp);
            hn::BlendedStore(hn::Load(d, tmp), hn::FirstN(d, count), d, o);
            if (count > N)
                hn::BlendedStore(hn::Load(d, tmp + N), hn::FirstN(d, count - N), d, o + N);
        }
    }
}

template <size_t SW>
void GatherRows(const DwGatherTaps& gt, const float* dy, size_t ow, const float* w, float* dx,
                ptrdiff_t dx_row, size_t h, size_t width) {
    const DF d;
    const size_t N = hn::Lanes(d);
    const ptrdiff_t cmin = gt.cmin, cmax = gt.cmax;
    // Phase columns [qlo, qhi) read only diff's columns and write only dx's for every tap.
    const ptrdiff_t qlo = std::max<ptrdiff_t>(0, -cmin);
    const ptrdiff_t qhi = std::min<ptrdiff_t>(static_cast<ptrdiff_t>(ow) - cmax,
                                              static_cast<ptrdiff_t>(width / SW));
    const size_t nq = (width + SW - 1) / SW;
    auto inside = [&](size_t q0, size_t len) {
        return static_cast<ptrdiff_t>(q0) >= qlo && static_cast<ptrdiff_t>(q0 + len) <= qhi;
    };
    MF masks[kMaxKw];
    for (size_t iy = 0; iy < h; ++iy) {
        PhaseTaps pt[SW];
        for (size_t px = 0; px < SW; ++px)
            pt[px] = {gt.taps.data() + gt.start[iy * SW + px],
                      gt.taps.data() + gt.start[iy * SW + px + 1]};
        float* o = dx + static_cast<ptrdiff_t>(iy) * dx_row;
        for (size_t q0 = 0; q0 < nq;) {
            if (inside(q0, kVecs * N)) {
                Block<SW, kVecs, false>(d, pt, dy, w, masks, q0, o + SW * q0, 0);
                q0 += kVecs * N;
            } else if (inside(q0, N)) {
                Block<SW, 1, false>(d, pt, dy, w, masks, q0, o + SW * q0, 0);
                q0 += N;
            } else {
                for (ptrdiff_t c = cmin; c <= cmax; ++c)
                    masks[c - cmin] = ColumnsIn(d, static_cast<ptrdiff_t>(q0) + c, ow);
                size_t count = std::min(width, SW * (q0 + N)) - SW * q0;
                Block<SW, 1, true>(d, pt, dy, w, masks, q0, o + SW * q0, count);
                q0 += N;
            }
        }
    }
}

bool GatherSupported(const DwTaps& t) {
    // Offsets c span at most (kw - 1) * dw + 1 values: one edge mask each.
    return (t.sw == 1 || t.sw == 2) && (t.kw - 1) * t.dw < kMaxKw;
}

void Gather(const DwGatherTaps& gt, const DwTaps& t, const float* dy, size_t ow, const float* w,
            float* dx, ptrdiff_t dx_row, size_t h, size_t width) {
    if (t.sw == 1)
        GatherRows<1>(gt, dy, ow, w, dx, dx_row, h, width);
    else
        GatherRows<2>(gt, dy, ow, w, dx, dx_row, h, width);
}

#else  // targets without masked loads that skip memory: the scatter

bool GatherSupported(const DwTaps&) {
    return false;
}

void Gather(const DwGatherTaps&, const DwTaps&, const float*, size_t, const float*, float*,
            ptrdiff_t, size_t, size_t) {}

#endif

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(GatherSupported);
HWY_EXPORT(Gather);

bool dw_grad_data_gather_supported(const DwTaps& t) {
    return HWY_DYNAMIC_DISPATCH(GatherSupported)(t);
}

DwGatherTaps dw_grad_data_gather_taps(const DwTaps& t, size_t top, size_t left, size_t mult,
                                      ptrdiff_t plane, ptrdiff_t row, size_t oh, size_t h) {
    const auto sw = static_cast<ptrdiff_t>(t.sw), sh = static_cast<ptrdiff_t>(t.sh);
    // Per phase px, the column taps reaching input columns px + sw * qx: kx and its offset c
    // (phase column qx reads diff column qx + c).
    std::vector<std::vector<std::pair<size_t, ptrdiff_t>>> cols(t.sw);
    DwGatherTaps g;
    bool any = false;
    for (size_t px = 0; px < t.sw; ++px)
        for (size_t kx = 0; kx < t.kw; ++kx) {
            ptrdiff_t r = static_cast<ptrdiff_t>(px + left) - static_cast<ptrdiff_t>(kx * t.dw);
            if (r % sw != 0)
                continue;
            ptrdiff_t c = r / sw;
            cols[px].push_back({kx, c});
            g.cmin = any ? std::min(g.cmin, c) : c;
            g.cmax = any ? std::max(g.cmax, c) : c;
            any = true;
        }
    g.start.push_back(0);
    for (size_t iy = 0; iy < h; ++iy)
        for (size_t px = 0; px < t.sw; ++px) {
            for (size_t ky = 0; ky < t.kh; ++ky) {
                ptrdiff_t q = static_cast<ptrdiff_t>(iy + top) - static_cast<ptrdiff_t>(ky * t.dh);
                if (q < 0 || q % sh != 0 || q / sh >= static_cast<ptrdiff_t>(oh))
                    continue;
                for (size_t m = 0; m < mult; ++m)
                    for (const auto& [kx, c] : cols[px])
                        g.taps.push_back({static_cast<ptrdiff_t>(m) * plane + (q / sh) * row + c,
                                          static_cast<uint32_t>((m * t.kh + ky) * t.kw + kx),
                                          static_cast<uint32_t>(c - g.cmin)});
            }
            g.start.push_back(static_cast<uint32_t>(g.taps.size()));
        }
    return g;
}

void dw_grad_data_gather(const DwGatherTaps& taps, const DwTaps& t, const float* dy, size_t ow,
                         const float* w, float* dx, ptrdiff_t dx_row, size_t h, size_t width) {
    HWY_DYNAMIC_DISPATCH(Gather)(taps, t, dy, ow, w, dx, dx_row, h, width);
}

}  // namespace neomeg::dnn::x86
#endif
