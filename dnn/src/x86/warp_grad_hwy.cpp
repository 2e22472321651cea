// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/warp_grad_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <algorithm>

#include "src/x86/from_double.h"
#include "src/x86/warp_grad_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void ScatterTaps(const ScatterTap* taps, size_t n, const double* g, size_t count, double* acc) {
    const hn::ScalableTag<double> dd;
    const size_t lanes = hn::Lanes(dd);
    const bool whole = count == 8 && 8 % lanes == 0;
    for (size_t i = 0; i < n; ++i) {
        const ScatterTap& t = taps[i];
        const double* gi = g + i * 8;
        for (int q = 0; q < 4; ++q) {
            if (t.pix[q] < 0)
                continue;
            double* a = acc + static_cast<size_t>(t.pix[q]) * count;
            if (whole) {
                const auto w = hn::Set(dd, t.w[q]);
                for (size_t l = 0; l < 8; l += lanes)
                    hn::StoreU(hn::Add(hn::LoadU(dd, a + l), hn::Mul(w, hn::LoadU(dd, gi + l))), dd,
                               a + l);
                continue;
            }
            for (size_t l = 0; l < count; ++l)
                a[l] += t.w[q] * gi[l];
        }
    }
}

// Channel by channel (each plane's gathers in L1), each lane's sums kept in gx, gy between
// channels: every point still adds its channels in order.
void Slopes(const SlopeRow& r, size_t ow, const float* src, ptrdiff_t src_step, const float* diff,
            ptrdiff_t diff_row, ptrdiff_t diff_step, size_t channels, double scalar, double* gx,
            double* gy) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::Rebind<int32_t, decltype(dd)> di;
    const hn::Rebind<uint32_t, decltype(dd)> du32;
    const hn::Rebind<int64_t, decltype(dd)> di64;
    const hn::Rebind<uint64_t, decltype(dd)> du64;
    const size_t lanes = hn::Lanes(dd);
    const auto one = hn::Set(dd, 1.0), zero = hn::Zero(dd), sc = hn::Set(dd, scalar);
    const size_t rows = ow ? r.n / ow : 0;
    std::fill(gx, gx + r.n, 0.0);
    std::fill(gy, gy + r.n, 0.0);
    for (size_t c = 0; c < channels; ++c) {
        const float* p = src + static_cast<ptrdiff_t>(c) * src_step;
        for (size_t y = 0; y < rows; ++y) {
            const float* d = diff + static_cast<ptrdiff_t>(c) * diff_step +
                             static_cast<ptrdiff_t>(y) * diff_row;
            size_t x = 0;
            for (; x + lanes <= ow; x += lanes) {
                const size_t i = y * ow + x;
                hn::Vec<decltype(dd)> v[4];
                hn::Vec<decltype(di)> o[4];
                for (int q = 0; q < 4; ++q)
                    o[q] = hn::LoadU(di, r.off[q] + i);
                // Each row's two taps side by side in every lane (inside the image, not folded
                // by the border): one 64-bit gather a row, its halves the two taps.
                const auto next = hn::Set(di, 1);
                if (hn::AllTrue(di, hn::And(hn::And(hn::Eq(o[1], hn::Add(o[0], next)),
                                                    hn::Eq(o[3], hn::Add(o[2], next))),
                                            hn::And(hn::Gt(o[0], hn::Set(di, -1)),
                                                    hn::Gt(o[2], hn::Set(di, -1)))))) {
                    for (int row = 0; row < 2; ++row) {
                        const auto pair =
                                hn::GatherOffset(du64, reinterpret_cast<const uint64_t*>(p),
                                                 hn::ShiftLeft<2>(hn::PromoteTo(di64, o[row * 2])));
                        v[row * 2] = hn::PromoteTo(dd, hn::BitCast(df, hn::TruncateTo(du32, pair)));
                        v[row * 2 + 1] = hn::PromoteTo(
                                dd,
                                hn::BitCast(df, hn::TruncateTo(du32, hn::ShiftRight<32>(pair))));
                    }
                } else {
                    for (int q = 0; q < 4; ++q)
                        v[q] = hn::IfThenElse(
                                hn::Lt(hn::PromoteTo(dd, o[q]), zero), sc,
                                hn::PromoteTo(dd,
                                              hn::GatherIndex(df, p, hn::Max(o[q], hn::Zero(di)))));
                }
                const auto fx = hn::LoadU(dd, r.fx + i), fy = hn::LoadU(dd, r.fy + i);
                const auto g = hn::PromoteTo(dd, hn::LoadU(df, d + x));
                hn::StoreU(
                        hn::Add(hn::LoadU(dd, gx + i),
                                hn::Mul(g, hn::Add(hn::Mul(hn::Sub(one, fy), hn::Sub(v[1], v[0])),
                                                   hn::Mul(fy, hn::Sub(v[3], v[2]))))),
                        dd, gx + i);
                hn::StoreU(
                        hn::Add(hn::LoadU(dd, gy + i),
                                hn::Mul(g, hn::Add(hn::Mul(hn::Sub(one, fx), hn::Sub(v[2], v[0])),
                                                   hn::Mul(fx, hn::Sub(v[3], v[1]))))),
                        dd, gy + i);
            }
            for (; x < ow; ++x) {
                const size_t i = y * ow + x;
                double v[4];
                for (int q = 0; q < 4; ++q)
                    v[q] = r.off[q][i] < 0 ? scalar : p[r.off[q][i]];
                const double fx = r.fx[i], fy = r.fy[i], g = d[x];
                gx[i] += g * ((1 - fy) * (v[1] - v[0]) + fy * (v[3] - v[2]));
                gy[i] += g * ((1 - fx) * (v[2] - v[0]) + fx * (v[3] - v[1]));
            }
        }
    }
    for (size_t i = 0; i < r.n; ++i)
        if (r.use[i] == 0)
            gx[i] = gy[i] = 0;
}

void SampleRowF32(const SampleRow& r, const float* const* planes, size_t count, float* const* dst,
                  ptrdiff_t step) {
    for (size_t i = 0; i < r.n; ++i) {
        const int32_t o0 = r.off[0][i], o1 = r.off[1][i], o2 = r.off[2][i], o3 = r.off[3][i];
        const float w0 = r.w[0][i], w1 = r.w[1][i], w2 = r.w[2][i], w3 = r.w[3][i];
        for (size_t l = 0; l < count; ++l) {
            const float* p = planes[l];
            dst[l][static_cast<ptrdiff_t>(i) * step] =
                    (w0 * p[o0] + w1 * p[o1]) + (w2 * p[o2] + w3 * p[o3]);
        }
    }
}

void SampleRowClF32(const SampleRow& r, const float* img, size_t cp, float* out) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    for (size_t i = 0; i < r.n; ++i) {
        const float* t[4];
        hn::Vec<decltype(d)> w[4];
        for (int q = 0; q < 4; ++q) {
            t[q] = img + static_cast<size_t>(r.off[q][i]) * cp;
            w[q] = hn::Set(d, r.w[q][i]);
        }
        float* o = out + i * cp;
        for (size_t c = 0; c < cp; c += lanes) {
            const auto a = hn::Add(hn::Mul(w[0], hn::LoadU(d, t[0] + c)),
                                   hn::Mul(w[1], hn::LoadU(d, t[1] + c)));
            const auto b = hn::Add(hn::Mul(w[2], hn::LoadU(d, t[2] + c)),
                                   hn::Mul(w[3], hn::LoadU(d, t[3] + c)));
            hn::StoreU(hn::Add(a, b), d, o + c);
        }
    }
}

// The vector conversion rounds as the scalar one does: to nearest, past float32's range to
// infinity (double_to_float's rule, which the scalar tail keeps).
void Demote(const double* in, size_t n, float* out) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::DemoteTo(df, hn::LoadU(dd, in + i)), df, out + i);
    for (; i < n; ++i)
        out[i] = double_to_float(in[i]);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(ScatterTaps);
HWY_EXPORT(Slopes);
HWY_EXPORT(Demote);
HWY_EXPORT(SampleRowF32);
HWY_EXPORT(SampleRowClF32);

void sample_row_cl_f32(const SampleRow& row, const float* img, size_t cp, float* out) {
    HWY_DYNAMIC_DISPATCH(SampleRowClF32)(row, img, cp, out);
}

void sample_row_f32(const SampleRow& row, const float* const* planes, size_t count,
                    float* const* dst, ptrdiff_t step) {
    HWY_DYNAMIC_DISPATCH(SampleRowF32)(row, planes, count, dst, step);
}

void demote_f64(const double* in, size_t n, float* out) {
    HWY_DYNAMIC_DISPATCH(Demote)(in, n, out);
}

void scatter_taps_f64(const ScatterTap* taps, size_t n, const double* g, size_t count,
                      double* acc) {
    HWY_DYNAMIC_DISPATCH(ScatterTaps)(taps, n, g, count, acc);
}

void slopes_f64(const SlopeRow& points, size_t ow, const float* src, ptrdiff_t src_step,
                const float* diff, ptrdiff_t diff_row, ptrdiff_t diff_step, size_t channels,
                double scalar, double* gx, double* gy) {
    HWY_DYNAMIC_DISPATCH(Slopes)
    (points, ow, src, src_step, diff, diff_row, diff_step, channels, scalar, gx, gy);
}

}  // namespace neomeg::dnn::x86
#endif
