// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/depthwise_blocked_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>

#include "src/x86/depthwise_blocked_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The outputs [first, last) whose tap at offset `tap` (k * dilation - pad) reads inside
// [0, in): o * stride + tap in [0, in).
HWY_INLINE void valid_outputs(ptrdiff_t tap, ptrdiff_t stride, size_t in, size_t out, size_t& first,
                              size_t& last) {
    const ptrdiff_t lo = tap >= 0 ? 0 : (-tap + stride - 1) / stride;
    const ptrdiff_t hi_num = static_cast<ptrdiff_t>(in) - 1 - tap;
    const ptrdiff_t hi = hi_num < 0 ? 0 : hi_num / stride + 1;
    first = static_cast<size_t>(std::min<ptrdiff_t>(lo, static_cast<ptrdiff_t>(out)));
    last = std::max(first,
                    static_cast<size_t>(std::min<ptrdiff_t>(hi, static_cast<ptrdiff_t>(out))));
}

// One tap of one image: the products of `lanes` adjacent channels (from lane c0 of the block) in
// four chains, which the FMAs' latency needs, summed into out[0, lanes).
template <class D>
HWY_INLINE void tap_sums(D d, const DwBlockedGeom& g, const float* xs, const float* ys,
                         ptrdiff_t ty, ptrdiff_t tx, size_t c0, float* out) {
    size_t y0, y1, x0, x1;
    valid_outputs(ty, g.sh, g.ih, g.oh, y0, y1);
    valid_outputs(tx, g.sw, g.iw, g.ow, x0, x1);
    const ptrdiff_t b = static_cast<ptrdiff_t>(g.block);
    const ptrdiff_t xstep = g.sw * b;
    auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    for (size_t oy = y0; oy < y1; ++oy) {
        const ptrdiff_t iy = static_cast<ptrdiff_t>(oy) * g.sh + ty;
        const float* yr = ys + static_cast<ptrdiff_t>(oy * g.ow) * b + c0;
        const float* xr =
                xs + (iy * static_cast<ptrdiff_t>(g.iw) + tx) * b + static_cast<ptrdiff_t>(c0);
        size_t ox = x0;
        for (; ox + 4 <= x1; ox += 4) {
            const auto o = static_cast<ptrdiff_t>(ox);
            s0 = hn::MulAdd(hn::LoadU(d, yr + o * b), hn::LoadU(d, xr + o * xstep), s0);
            s1 = hn::MulAdd(hn::LoadU(d, yr + (o + 1) * b), hn::LoadU(d, xr + (o + 1) * xstep), s1);
            s2 = hn::MulAdd(hn::LoadU(d, yr + (o + 2) * b), hn::LoadU(d, xr + (o + 2) * xstep), s2);
            s3 = hn::MulAdd(hn::LoadU(d, yr + (o + 3) * b), hn::LoadU(d, xr + (o + 3) * xstep), s3);
        }
        for (; ox < x1; ++ox) {
            const auto o = static_cast<ptrdiff_t>(ox);
            s0 = hn::MulAdd(hn::LoadU(d, yr + o * b), hn::LoadU(d, xr + o * xstep), s0);
        }
    }
    hn::StoreU(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), d, out);
}

// The whole sum with vectors of d's lanes, which divide the block.
template <class D>
void accumulate(D d, const DwBlockedGeom& g, const float* x, const float* dy, size_t cb,
                double* acc) {
    const size_t b = g.block, lanes = hn::Lanes(d);
    HWY_ALIGN float sums[hn::MaxLanes(d)];
    for (size_t n = 0; n < g.n; ++n) {
        const size_t image = n * g.blocks + cb;
        const float* xs = x + image * g.ih * g.iw * b;
        const float* ys = dy + image * g.oh * g.ow * b;
        for (size_t ky = 0; ky < g.kh; ++ky)
            for (size_t kx = 0; kx < g.kw; ++kx) {
                const ptrdiff_t ty = static_cast<ptrdiff_t>(ky) * g.dh - g.ph;
                const ptrdiff_t tx = static_cast<ptrdiff_t>(kx) * g.dw - g.pw;
                double* a = acc + (ky * g.kw + kx) * b;
                for (size_t c0 = 0; c0 < b; c0 += lanes) {
                    tap_sums(d, g, xs, ys, ty, tx, c0, sums);
                    for (size_t l = 0; l < lanes; ++l)
                        a[c0 + l] += sums[l];
                }
            }
    }
}

void DwBlockedFilterGrad(const DwBlockedGeom& g, const float* x, const float* dy, size_t cb,
                         double* acc) {
    std::fill(acc, acc + g.kh * g.kw * g.block, 0.0);
    // The widest vector that divides the block (16 channels on AVX-512, 8 on AVX2).
    const hn::CappedTag<float, 16> d16;
    const hn::CappedTag<float, 8> d8;
    const hn::CappedTag<float, 4> d4;
    if (g.block % hn::Lanes(d16) == 0)
        accumulate(d16, g, x, dy, cb, acc);
    else if (g.block % hn::Lanes(d8) == 0)
        accumulate(d8, g, x, dy, cb, acc);
    else if (g.block % hn::Lanes(d4) == 0)
        accumulate(d4, g, x, dy, cb, acc);
    else
        accumulate(hn::CappedTag<float, 1>(), g, x, dy, cb, acc);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(DwBlockedFilterGrad);

void dw_blocked_filter_grad(const DwBlockedGeom& g, const float* x, const float* dy, size_t cb,
                            double* acc) {
    HWY_DYNAMIC_DISPATCH(DwBlockedFilterGrad)(g, x, dy, cb, acc);
}

}  // namespace neomeg::dnn::x86
#endif
