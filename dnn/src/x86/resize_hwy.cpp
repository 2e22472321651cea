// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/resize_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>

#include "src/x86/resize_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Double lanes, and the floats and 32-bit indices of as many lanes.
using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;
using DI = hn::Rebind<int32_t, DD>;

// naive's sum for one output, in scalar double operations (the columns past the last vector).
inline float RowScalar(const float* r0, const float* r1, double hw, int32_t c0, int32_t c1,
                       double ww, bool nearest) {
    if (nearest)
        return r0[c0];
    double acc = 0;
    acc += (1 - hw) * (1 - ww) * static_cast<double>(r0[c0]);
    acc += (1 - hw) * ww * static_cast<double>(r0[c1]);
    acc += hw * (1 - ww) * static_cast<double>(r1[c0]);
    acc += hw * ww * static_cast<double>(r1[c1]);
    return static_cast<float>(acc);
}

void Row(const float* r0, const float* r1, double hw, const int32_t* c0, const int32_t* c1,
         const double* ww, bool nearest, float* out, size_t n) {
    const DD dd;
    const DF df;
    const DI di;
    const size_t N = hn::Lanes(dd);
    size_t x = 0;
    if (nearest) {
        for (; x + N <= n; x += N)
            hn::StoreU(hn::GatherIndex(df, r0, hn::LoadU(di, c0 + x)), df, out + x);
    } else {
        const auto one = hn::Set(dd, 1.0), h1 = hn::Set(dd, hw), h0 = hn::Sub(one, h1);
        for (; x + N <= n; x += N) {
            const auto i0 = hn::LoadU(di, c0 + x), i1 = hn::LoadU(di, c1 + x);
            const auto w1 = hn::LoadU(dd, ww + x), w0 = hn::Sub(one, w1);
            auto tap = [&](const float* r, decltype(i0) i) {
                return hn::PromoteTo(dd, hn::GatherIndex(df, r, i));
            };
            // Products and sums one at a time, in naive's order: no fused multiply-add.
            auto acc = hn::Zero(dd);
            acc = hn::Add(acc, hn::Mul(hn::Mul(h0, w0), tap(r0, i0)));
            acc = hn::Add(acc, hn::Mul(hn::Mul(h0, w1), tap(r0, i1)));
            acc = hn::Add(acc, hn::Mul(hn::Mul(h1, w0), tap(r1, i0)));
            acc = hn::Add(acc, hn::Mul(hn::Mul(h1, w1), tap(r1, i1)));
            hn::StoreU(hn::DemoteTo(df, acc), df, out + x);
        }
    }
    for (; x < n; ++x)
        out[x] = RowScalar(r0, r1, hw, c0[x], c1[x], ww[x], nearest);
}

size_t BackwardLanes() {
    return hn::Lanes(DD());
}

void BackwardPlanes(const float* dy, const int32_t* dy_plane, ptrdiff_t dy_row, ptrdiff_t dy_col,
                    size_t out_h, size_t out_w, ResizeAxisTaps h, ResizeAxisTaps w, bool nearest,
                    double* acc, float* grad, const int32_t* g_plane, ptrdiff_t g_row,
                    ptrdiff_t g_col, size_t in_h, size_t in_w) {
    const DD dd;
    const DF df;
    const DI di;
    const size_t N = hn::Lanes(dd);
    const auto src_planes = hn::LoadU(di, dy_plane);
    std::fill(acc, acc + in_h * in_w * N, 0.0);
    // Element (iy, ix) of every lane's plane at acc + (iy * in_w + ix) * N.
    auto add = [&](size_t iy, size_t ix, decltype(hn::Zero(dd)) v) {
        double* p = acc + (iy * in_w + ix) * N;
        hn::StoreU(hn::Add(hn::LoadU(dd, p), v), dd, p);
    };
    for (size_t oy = 0; oy < out_h; ++oy) {
        const auto hy0 = static_cast<size_t>(h.i0[oy]), hy1 = static_cast<size_t>(h.i1[oy]);
        const double hw = h.w[oy];
        const float* row = dy + static_cast<ptrdiff_t>(oy) * dy_row;
        for (size_t ox = 0; ox < out_w; ++ox) {
            const auto v = hn::PromoteTo(
                    dd, hn::GatherIndex(df, row + static_cast<ptrdiff_t>(ox) * dy_col, src_planes));
            const auto wx0 = static_cast<size_t>(w.i0[ox]), wx1 = static_cast<size_t>(w.i1[ox]);
            if (nearest) {
                add(hy0, wx0, v);
                continue;
            }
            const double ww = w.w[ox];
            // naive's four terms in its order; the weights are its scalar products.
            add(hy0, wx0, hn::Mul(hn::Set(dd, (1 - hw) * (1 - ww)), v));
            add(hy0, wx1, hn::Mul(hn::Set(dd, (1 - hw) * ww), v));
            add(hy1, wx0, hn::Mul(hn::Set(dd, hw * (1 - ww)), v));
            add(hy1, wx1, hn::Mul(hn::Set(dd, hw * ww), v));
        }
    }
    const auto dst_planes = hn::LoadU(di, g_plane);
    for (size_t iy = 0; iy < in_h; ++iy)
        for (size_t ix = 0; ix < in_w; ++ix)
            hn::ScatterIndex(
                    hn::DemoteTo(df, hn::LoadU(dd, acc + (iy * in_w + ix) * N)), df,
                    grad + static_cast<ptrdiff_t>(iy) * g_row + static_cast<ptrdiff_t>(ix) * g_col,
                    dst_planes);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Row);
HWY_EXPORT(BackwardLanes);
HWY_EXPORT(BackwardPlanes);

void resize_row(const float* r0, const float* r1, double hw, const int32_t* c0, const int32_t* c1,
                const double* ww, bool nearest, float* out, size_t n) {
    HWY_DYNAMIC_DISPATCH(Row)(r0, r1, hw, c0, c1, ww, nearest, out, n);
}

size_t resize_backward_lanes() {
    return HWY_DYNAMIC_DISPATCH(BackwardLanes)();
}

void resize_backward_planes(const float* dy, const int32_t* dy_plane, ptrdiff_t dy_row,
                            ptrdiff_t dy_col, size_t out_h, size_t out_w, ResizeAxisTaps h,
                            ResizeAxisTaps w, bool nearest, double* acc, float* grad,
                            const int32_t* g_plane, ptrdiff_t g_row, ptrdiff_t g_col, size_t in_h,
                            size_t in_w) {
    HWY_DYNAMIC_DISPATCH(BackwardPlanes)
    (dy, dy_plane, dy_row, dy_col, out_h, out_w, h, w, nearest, acc, grad, g_plane, g_row, g_col,
     in_h, in_w);
}

}  // namespace neomeg::dnn::x86
#endif
