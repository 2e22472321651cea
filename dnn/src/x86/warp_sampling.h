// What the x86 Remap and WarpPerspective kernels share: an image's source points (naive's
// BilinearPoint, from remap_point.h or warp_point.h: four taps folded by the border mode, -1 for
// CONSTANT's value) computed once for all channels, and the three loops over them.
//
// The forward reads a table of each point's four plane offsets and float32 weights (naive's
// double weights rounded once) and sums the four products in float32, as two pairs: naive sums
// in double, so values differ by the float32 sums' rounding (the bound is derived in
// dnn/test/x86/remap.cpp). A point the table cannot hold (not finite, NEAREST, a CONSTANT tap) is
// "special" and computed as naive computes it, in double, after the table's loop; naive weights
// every tap it reads, zero weights too, so a NaN or infinity among a point's taps reaches it in
// both. The data gradient and the map gradient's slopes sum in double in naive's order: naive's
// bits.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "src/naive/border.h"
#include "src/x86/from_double.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86::warp_x86 {

// The points f(y, x) of an oh x ow output, row-major, computed across threads.
template <class F>
auto points_of(size_t oh, size_t ow, F&& f) {
    std::vector<decltype(f(size_t{0}, size_t{0}))> pts(oh * ow);
    parallel_ranges(oh, oh * ow * 16, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t y = b; y < e; ++y)
            for (size_t x = 0; x < ow; ++x)
                pts[y * ow + x] = f(y, x);
    });
    return pts;
}

// Whether a point has Remap's single NEAREST tap.
template <class P>
bool nearest(const P& pt) {
    if constexpr (requires { pt.nearest; })
        return pt.nearest;
    else
        return false;
}

// Tap (i, j) of a point: the pixel, or `scalar` where the border mode reads the constant.
template <class P>
double tap(const P& pt, const float* plane, const Nchw& sp, double scalar, int i, int j) {
    if (pt.row[i] < 0 || pt.col[j] < 0)
        return scalar;
    return plane[sp.at(pt.row[i], pt.col[j])];
}

// A point's value as naive computes it; `outside` where the point is not finite.
template <class P>
double value(const P& pt, const float* plane, const Nchw& sp, double scalar, double outside) {
    if (!pt.finite)
        return outside;
    double v = 0;
    const int n = nearest(pt) ? 1 : 2;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            v += pt.weight(i, j) * tap(pt, plane, sp, scalar, i, j);
    return v;
}

// One image's points as a table of four taps each; special points read tap 0 with weight 0 in
// the table's loop and are written again from `special` (point indices, ascending), row y's
// from special[row_at[y]].
struct TapTable {
    struct Taps {
        std::array<ptrdiff_t, 4> off;
        std::array<float, 4> w;
    };
    std::vector<Taps> taps;
    std::vector<uint32_t> special, row_at;

    template <class P>
    TapTable(const std::vector<P>& pts, size_t ow, const Nchw& sp) : taps(pts.size()) {
        for (size_t i = 0; i < pts.size(); ++i) {
            if (i % std::max(ow, size_t(1)) == 0)
                row_at.push_back(static_cast<uint32_t>(special.size()));
            const P& pt = pts[i];
            bool inside = pt.finite && !nearest(pt) && pt.row[0] >= 0 && pt.row[1] >= 0 &&
                          pt.col[0] >= 0 && pt.col[1] >= 0;
            Taps& t = taps[i];
            for (int q = 0; q < 4; ++q) {
                t.off[q] = inside ? sp.at(pt.row[q / 2], pt.col[q % 2]) : 0;
                t.w[q] = inside ? static_cast<float>(pt.weight(q / 2, q % 2)) : 0.f;
            }
            if (!inside)
                special.push_back(static_cast<uint32_t>(i));
        }
        row_at.push_back(static_cast<uint32_t>(special.size()));
    }
};

// Output rows [y0, y1) of one plane.
template <class P>
void sample_rows(const TapTable& t, const std::vector<P>& pts, size_t ow, size_t y0, size_t y1,
                 const float* plane, const Nchw& sp, float* dst, const Nchw& dp, double scalar,
                 double outside) {
    for (size_t y = y0; y < y1; ++y) {
        float* row = dst + dp.at(static_cast<int64_t>(y), 0);
        const TapTable::Taps* q = &t.taps[y * ow];
        for (size_t x = 0; x < ow; ++x, ++q)
            row[static_cast<ptrdiff_t>(x) * dp.s[3]] =
                    (q->w[0] * plane[q->off[0]] + q->w[1] * plane[q->off[1]]) +
                    (q->w[2] * plane[q->off[2]] + q->w[3] * plane[q->off[3]]);
        for (uint32_t s = t.row_at[y]; s < t.row_at[y + 1]; ++s) {
            size_t x = t.special[s] - y * ow;
            row[static_cast<ptrdiff_t>(x) * dp.s[3]] =
                    from_double<float>(value(pts[t.special[s]], plane, sp, scalar, outside));
        }
    }
}

// The forward of one output image: its (channel, row) pairs across threads.
template <class P>
void sample_image(const std::vector<P>& pts, size_t channels, size_t oh, size_t ow,
                  const float* src, const Nchw& sp, size_t src_n, float* dst, const Nchw& dp,
                  size_t dst_n, double scalar, double outside) {
    const TapTable t(pts, ow, sp);
    parallel_ranges(channels * oh, channels * oh * ow * 8, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e;) {
            size_t c = u / oh, y = u % oh, y1 = std::min(oh, y + (e - u));
            sample_rows(t, pts, ow, y, y1, src + sp.plane(src_n, c), sp, dst + dp.plane(dst_n, c),
                        dp, scalar, outside);
            u += y1 - y;
        }
    });
}

// Adds diff plane d's contributions, in output order, to a dense iw-wide double plane.
template <class P>
void scatter(const std::vector<P>& pts, size_t oh, size_t ow, const float* d, const Nchw& dp,
             double* acc, int64_t iw) {
    for (size_t y = 0; y < oh; ++y)
        for (size_t x = 0; x < ow; ++x) {
            const P& pt = pts[y * ow + x];
            if (!pt.finite)
                continue;
            const int n = nearest(pt) ? 1 : 2;
            double g = d[dp.at(static_cast<int64_t>(y), static_cast<int64_t>(x))];
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j)
                    if (pt.row[i] >= 0 && pt.col[j] >= 0)
                        acc[pt.row[i] * iw + pt.col[j]] += pt.weight(i, j) * g;
        }
}

// g times a bilinear point's slopes d value / d x and d value / d y in one plane (naive's
// formula).
template <class P>
std::pair<double, double> slope(const P& pt, const float* plane, const Nchw& sp, double scalar,
                                double g) {
    double v[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            v[i][j] = tap(pt, plane, sp, scalar, i, j);
    return {g * ((1 - pt.fy) * (v[0][1] - v[0][0]) + pt.fy * (v[1][1] - v[1][0])),
            g * ((1 - pt.fx) * (v[1][0] - v[0][0]) + pt.fx * (v[1][1] - v[0][1]))};
}

}  // namespace neomeg::dnn::x86::warp_x86
