// What the x86 Remap and WarpPerspective kernels share: an image's source points (naive's
// BilinearPoint, from remap_point.h or warp_point.h: four taps folded by the border mode, -1 for
// CONSTANT's value) computed once for all channels, and the three loops over them.
//
// The forward reads a table of each point's four plane offsets and float32 weights (naive's
// double weights rounded once) and sums the four products in float32, as two pairs: naive sums
// in double, so values differ by the float32 sums' rounding (the bound is derived in
// dnn/test/x86/vision_loops.h). A point the table does not hold (not finite, NEAREST, at or past
// an edge, where the border mode folds or replaces taps) is "special" and computed as naive
// computes it, in double, after the table's loop; naive weights every tap it reads, zero weights
// too, so a NaN or infinity among a point's taps reaches it in both. The data gradient and the map
// gradient's slopes sum in double in naive's order: naive's bits.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "src/naive/border.h"
#include "src/x86/channels_last.h"
#include "src/x86/from_double.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"
#include "src/x86/warp_grad_hwy.h"

namespace neomeg::dnn::x86::warp_x86 {

// A point's work for the OpenMP split (kParallelGrain's simple operations): its coordinates'
// floors, border rules and weights in double, with the stores of its table entry (16 made a
// 64 x 64 image's points, a quarter of the bench remap's gradient time on two threads, run on
// one).
inline constexpr size_t kPointWork = 64;

// The points f(y, x) of an oh x ow output, row-major, computed across threads.
template <class F>
auto points_of(size_t oh, size_t ow, F&& f) {
    std::vector<decltype(f(size_t{0}, size_t{0}))> pts(oh * ow);
    parallel_ranges(oh, oh * ow * kPointWork, kParallelGrain, [&](size_t b, size_t e) {
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

// One image's oh x ow points as a table of four taps each, rows across threads. A point whose
// coordinates (x, y) put all four taps inside the image needs no border rule: its taps and
// weights are formed here as naive forms them (border.h: floor, the fractions, the weights'
// products), without the point. Others take naive's point, point(y, x): at an edge whose border
// mode folds the taps into the image, the table holds its folded taps; the rest (not finite,
// NEAREST, a CONSTANT tap) are "special", read tap 0 with weight 0 in the table's loop and are
// written again from special_pts, row y's from special[row_at[y]]. The table is arrays over the
// points (sample_row_f32's lanes load them) with int32 offsets: on a plane whose extent does not
// fit int32 (2^31 elements between its first and last pixel) every point is special.
template <class P>
struct TapTable {
    std::array<std::vector<int32_t>, 4> off;  // tap q of point y * ow + x: off[q][y * ow + x]
    std::array<std::vector<float>, 4> w;
    std::vector<uint32_t> special, row_at;  // special: point indices, ascending
    std::vector<P> special_pts;

    // coords(y, x): the point's (x, y) as naive computes them; bilinear: not NEAREST.
    template <class Coords, class Point>
    TapTable(size_t oh, size_t ow, int64_t ih, int64_t iw, const Nchw& sp, bool bilinear,
             Coords&& coords, Point&& point)
        : row_at(oh + 1) {
        for (int q = 0; q < 4; ++q) {
            off[q].resize(oh * ow);
            w[q].resize(oh * ow);
        }
        const bool fits = plane_extent(ih, iw, sp) <= std::numeric_limits<int32_t>::max();
        std::vector<std::vector<std::pair<uint32_t, P>>> rows(oh);
        parallel_ranges(oh, oh * ow * kPointWork, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t y = b; y < e; ++y)
                for (size_t x = 0; x < ow; ++x) {
                    const size_t i = y * ow + x;
                    auto [px, py] = coords(y, x);
                    // Inside [0, len - 1) the taps are floor(v) + {0, 1} unfolded (NaN fails).
                    if (fits && bilinear && px >= 0 && py >= 0 &&
                        px < static_cast<double>(iw - 1) && py < static_cast<double>(ih - 1)) {
                        auto x0 = static_cast<int64_t>(px), y0 = static_cast<int64_t>(py);
                        double fx = px - static_cast<double>(x0), fy = py - static_cast<double>(y0);
                        for (int q = 0; q < 4; ++q) {
                            int r = q / 2, c = q % 2;
                            off[q][i] = static_cast<int32_t>(sp.at(y0 + r, x0 + c));
                            w[q][i] = static_cast<float>((r ? fy : 1 - fy) * (c ? fx : 1 - fx));
                        }
                        continue;
                    }
                    // At an edge: naive's point, in the table where the border mode folds every
                    // tap into the image.
                    P pt = point(y, x);
                    bool folded = fits && pt.finite && !nearest(pt) && pt.row[0] >= 0 &&
                                  pt.row[1] >= 0 && pt.col[0] >= 0 && pt.col[1] >= 0;
                    for (int q = 0; q < 4; ++q) {
                        off[q][i] =
                                folded ? static_cast<int32_t>(sp.at(pt.row[q / 2], pt.col[q % 2]))
                                       : 0;
                        w[q][i] = folded ? static_cast<float>(pt.weight(q / 2, q % 2)) : 0.f;
                    }
                    if (!folded)
                        rows[y].emplace_back(static_cast<uint32_t>(i), pt);
                }
        });
        for (size_t y = 0; y < oh; ++y) {
            row_at[y] = static_cast<uint32_t>(special.size());
            for (auto& [i, pt] : rows[y]) {
                special.push_back(i);
                special_pts.push_back(pt);
            }
        }
        row_at[oh] = static_cast<uint32_t>(special.size());
    }

    // The largest |offset| of a pixel of an ih x iw plane.
    static uint64_t plane_extent(int64_t ih, int64_t iw, const Nchw& sp) {
        return static_cast<uint64_t>(ih - 1) * static_cast<uint64_t>(std::abs(sp.s[2])) +
               static_cast<uint64_t>(iw - 1) * static_cast<uint64_t>(std::abs(sp.s[3]));
    }
};

// Planes the forward samples per read of a point's table entry.
inline constexpr size_t kSampleBlock = 4;

// Output rows [y0, y1) of count <= kSampleBlock planes: a point's taps are read once for them.
template <class P>
void sample_rows(const TapTable<P>& t, size_t ow, size_t y0, size_t y1, const float* const* planes,
                 size_t count, const Nchw& sp, float* const* dsts, const Nchw& dp, double scalar,
                 double outside) {
    float* at[kSampleBlock];
    for (size_t y = y0; y < y1; ++y) {
        const ptrdiff_t row = dp.at(static_cast<int64_t>(y), 0);
        const size_t i = y * ow;
        for (size_t l = 0; l < count; ++l)
            at[l] = dsts[l] + row;
        sample_row_f32(
                {{t.off[0].data() + i, t.off[1].data() + i, t.off[2].data() + i,
                  t.off[3].data() + i},
                 {t.w[0].data() + i, t.w[1].data() + i, t.w[2].data() + i, t.w[3].data() + i},
                 ow},
                planes, count, at, dp.s[3]);
        for (uint32_t s = t.row_at[y]; s < t.row_at[y + 1]; ++s) {
            const ptrdiff_t o = row + static_cast<ptrdiff_t>(t.special[s] - i) * dp.s[3];
            for (size_t l = 0; l < count; ++l)
                dsts[l][o] =
                        from_double<float>(value(t.special_pts[s], planes[l], sp, scalar, outside));
        }
    }
}

// The forward of one output image from its table: blocks of kSampleBlock channels' rows across
// threads. `scalar` is the border mode's constant; a point that is not finite reads it under
// CONSTANT, else NaN.
template <class P, class Mode>
void sample_image(const TapTable<P>& t, size_t channels, size_t oh, size_t ow, const float* src,
                  const Nchw& sp, size_t src_n, float* dst, const Nchw& dp, size_t dst_n,
                  Mode bmode, double scalar) {
    constexpr size_t kBlock = kSampleBlock;
    const double outside =
            bmode == Mode::CONSTANT ? scalar : std::numeric_limits<double>::quiet_NaN();
    const size_t blocks = (channels + kBlock - 1) / kBlock;
    parallel_ranges(blocks * oh, channels * oh * ow * 8, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e;) {
            size_t c0 = u / oh * kBlock, y = u % oh, y1 = std::min(oh, y + (e - u));
            const float* planes[kBlock];
            float* dsts[kBlock];
            const size_t n = std::min(kBlock, channels - c0);
            for (size_t l = 0; l < n; ++l) {
                planes[l] = src + sp.plane(src_n, c0 + l);
                dsts[l] = dst + dp.plane(dst_n, c0 + l);
            }
            sample_rows(t, ow, y, y1, planes, n, sp, dsts, dp, scalar, outside);
            u += y1 - y;
        }
    });
}

// The forward of output image dst_n (of dst's channels, oh x ow) from image src_n of src
// (NCHW float32, any strides), the points given as TapTable takes them. With at least half of
// the channels-last lanes used (cp the channels rounded up to kWarpChannelBlock) and dst dense
// along its rows, the image is copied channels-last and each row's points sum all channels as
// vectors, turned back into dst's planes in 8 x 8 register blocks: the same sums as the planes'
// loop (sample_image), a vector load per tap instead of a scalar one per channel (the bench's
// remap, 32 channels: 544 -> 350 us, one thread, AVX-512 on Zen 5).
template <class P, class Coords, class Point, class Mode>
void forward_image(const TensorND& src, size_t src_n, const TensorND& dst, size_t dst_n,
                   bool bilinear, Coords&& coords, Point&& point, Mode bmode, double scalar) {
    const size_t channels = dst.layout[1], oh = dst.layout[2], ow = dst.layout[3];
    const auto ih = static_cast<int64_t>(src.layout[2]);
    const auto iw = static_cast<int64_t>(src.layout[3]);
    const Nchw sp(src.layout), dp(dst.layout);
    const auto* in = static_cast<const float*>(src.raw_ptr());
    auto* out = static_cast<float*>(dst.raw_ptr());
    const size_t cp = (channels + kWarpChannelBlock - 1) / kWarpChannelBlock * kWarpChannelBlock;
    const bool cl = dp.s[3] == 1 && channels * 2 >= cp &&
                    static_cast<uint64_t>(ih) * static_cast<uint64_t>(iw) <=
                            static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
    if (!cl) {
        const TapTable<P> t(oh, ow, ih, iw, sp, bilinear, coords, point);
        sample_image(t, channels, oh, ow, in, sp, src_n, out, dp, dst_n, bmode, scalar);
        return;
    }
    TensorLayout one = src.layout;
    one.shape[0] = 1;
    const ChannelsLast img(TensorND(const_cast<float*>(in) + sp.plane(src_n, 0), one), cp);
    Nchw pixels = sp;  // the table's offsets: pixels of img
    pixels.s = {0, 0, iw, 1};
    const TapTable<P> t(oh, ow, ih, iw, pixels, bilinear, coords, point);
    const double outside =
            bmode == Mode::CONSTANT ? scalar : std::numeric_limits<double>::quiet_NaN();
    parallel_ranges(oh, channels * oh * ow * 8, kParallelGrain, [&](size_t b, size_t e) {
        std::vector<float> row(ow * cp);
        for (size_t y = b; y < e; ++y) {
            const size_t i = y * ow;
            sample_row_cl_f32(
                    {{t.off[0].data() + i, t.off[1].data() + i, t.off[2].data() + i,
                      t.off[3].data() + i},
                     {t.w[0].data() + i, t.w[1].data() + i, t.w[2].data() + i, t.w[3].data() + i},
                     ow},
                    img.data(), cp, row.data());
            float* d = out + dp.plane(dst_n, 0) + dp.at(static_cast<int64_t>(y), 0);
            transpose_tile_u32(reinterpret_cast<const uint32_t*>(row.data()), cp, ow, channels,
                               reinterpret_cast<uint32_t*>(d), dp.s[1], false);
            for (uint32_t s = t.row_at[y]; s < t.row_at[y + 1]; ++s) {
                const auto x = static_cast<ptrdiff_t>(t.special[s] - i);
                for (size_t c = 0; c < channels; ++c)
                    d[static_cast<ptrdiff_t>(c) * dp.s[1] + x] = from_double<float>(
                            value(t.special_pts[s], in + sp.plane(src_n, c), sp, scalar, outside));
            }
        }
    });
}

// Planes a pass over an image's points scatters into: the points are read an eighth as often.
// The bench's remap backward (32 channels of 64x64, 1 thread, CPU time) took 9.4 ms a
// forward+backward with one plane a pass, 9.1 with two, 8.5 with four, 7.6 with eight, 10.0
// with sixteen (their double planes then spill from L2), planes apart; with the block's planes
// interleaved (a tap's eight additions in one cache line) eight stayed best, and eight doubles
// are one AVX-512 vector (warp_grad_hwy.h).
inline constexpr size_t kScatterPlanes = 8;

// Each point's data-gradient taps (warp_grad_hwy.h), in naive's tap order: pixel row * iw + col
// with naive's weight; none for CONSTANT's value, NEAREST's unused taps and a point not finite.
// point(n, y, x) is the point of output pixel (y, x) of image n, for `images` oh x ow outputs,
// computed here (all images' rows across threads at once) and not kept; image n's taps start at
// n * oh * ow. Once per call, for all the blocks of planes.
template <class F>
std::vector<ScatterTap> scatter_taps(size_t images, size_t oh, size_t ow, int64_t iw, F&& point) {
    std::vector<ScatterTap> taps(images * oh * ow);
    parallel_ranges(
            images * oh, images * oh * ow * kPointWork, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t u = b; u < e; ++u)
                    for (size_t x = 0; x < ow; ++x) {
                        const auto pt = point(u / oh, u % oh, x);
                        const int n = nearest(pt) ? 1 : 2;
                        ScatterTap& t = taps[u * ow + x];
                        for (int q = 0; q < 4; ++q) {
                            const int r = q / 2, c = q % 2;
                            const bool on =
                                    pt.finite && r < n && c < n && pt.row[r] >= 0 && pt.col[c] >= 0;
                            t.pix[q] = on ? static_cast<int32_t>(pt.row[r] * iw + pt.col[c]) : -1;
                            t.w[q] = on ? pt.weight(r, c) : 0.0;
                        }
                    }
            });
    return taps;
}

// Adds the contributions of `count` diff planes (d, d + d_step, ...) to as many dense iw-wide
// double planes interleaved (pixel p of plane l at acc[p * count + l]), each in output order:
// a point's taps are read once for the block's planes, its diffs gathered a row at a time, and
// each plane gets its additions in naive's order, so the sums are naive's. The planes' pixels
// must fit int32 (scatter_taps).
inline void scatter(const ScatterTap* taps, size_t oh, size_t ow, const float* d, ptrdiff_t d_step,
                    size_t count, const Nchw& dp, double* acc) {
    std::vector<double> g(ow * kScatterPlanes);
    for (size_t y = 0; y < oh; ++y) {
        for (size_t l = 0; l < count; ++l) {
            const float* row =
                    d + static_cast<ptrdiff_t>(l) * d_step + dp.at(static_cast<int64_t>(y), 0);
            for (size_t x = 0; x < ow; ++x)
                g[x * kScatterPlanes + l] = row[static_cast<ptrdiff_t>(x) * dp.s[3]];
        }
        scatter_taps_f64(taps + y * ow, ow, g.data(), count, acc);
    }
}

// g times a bilinear point's slopes d value / d x and d value / d y, its taps' values v (naive's
// formula).
template <class P>
std::pair<double, double> slope(const P& pt, const double (&v)[2][2], double g) {
    return {g * ((1 - pt.fy) * (v[0][1] - v[0][0]) + pt.fy * (v[1][1] - v[1][0])),
            g * ((1 - pt.fx) * (v[1][0] - v[0][0]) + pt.fx * (v[1][1] - v[0][1]))};
}

// The map gradient's points of a chunk of rows as slopes_f64 reads them (warp_grad_hwy.h): tap
// offsets in a plane of src (-1: CONSTANT's value), the fractions, and whether the slope counts
// (use(point)); built by each thread for its chunk, while the chunk's loop runs.
struct SlopeTable {
    std::vector<int32_t> off[4];
    std::vector<double> fx, fy, use;

    explicit SlopeTable(size_t n) : fx(n), fy(n), use(n) {
        for (auto& o : off)
            o.resize(n);
    }

    // Points pts[at, at + n) into entries [0, n); false where an offset does not fit int32.
    template <class Points, class Use>
    bool fill(Points&& point, size_t at, size_t n, const Nchw& sp, Use&& used) {
        constexpr int64_t kMost = std::numeric_limits<int32_t>::max();
        for (size_t i = 0; i < n; ++i) {
            const auto& pt = point(at + i);
            const bool on = used(pt);
            for (int q = 0; q < 4; ++q) {
                const int r = q / 2, c = q % 2;
                int64_t o = 0;
                if (on)
                    o = pt.row[r] < 0 || pt.col[c] < 0 ? -1 : sp.at(pt.row[r], pt.col[c]);
                if (o > kMost || o < -kMost)
                    return false;
                off[q][i] = static_cast<int32_t>(o);
            }
            fx[i] = on ? pt.fx : 0.0;
            fy[i] = on ? pt.fy : 0.0;
            use[i] = on ? 1.0 : 0.0;
        }
        return true;
    }
};

// Per point point(i) of an oh x ow output (i = y * ow + x), out[2 i] and out[2 i + 1]: the sums
// over the channels, in order, of slope() in src's plane (src_n, c) times diff (diff_n, c) at the
// point; 0 where use(point) is false. Each point's sums add the channels in naive's order: naive's
// bits.
//
// Where diff is dense along x, the vector loop (warp_grad_hwy.h): chunks of rows across threads,
// each thread building its chunk's table, lanes over a row's points gathering their taps from one
// plane at a time (the bench's remap map gradient, 1 thread: 1.33 ms by the loop below, 1.47 with
// lanes over points but every channel per point, whose gathers then miss L1, 1.03 plane by
// plane). Otherwise (and for a chunk whose offsets pass int32) one point at a time: rows across
// threads; within a thread's rows, blocks of four channels, a point (larger than a plane's share
// of it) read once a block and its taps' offsets formed once, while the block's planes stay in
// cache.
template <class Points, class Use>
void point_slopes(Points&& point, size_t oh, size_t ow, size_t channels, const float* src,
                  const Nchw& sp, size_t src_n, const float* diff, const Nchw& dp, size_t diff_n,
                  double scalar, Use&& use, double* out) {
    auto one_by_one = [&](size_t b, size_t e) {
        constexpr size_t kBlock = 4;
        std::fill(out + b * ow * 2, out + e * ow * 2, 0.0);
        for (size_t c0 = 0; c0 < channels; c0 += kBlock) {
            const size_t count = std::min(kBlock, channels - c0);
            const float* planes[kBlock];
            const float* diffs[kBlock];
            for (size_t l = 0; l < count; ++l) {
                planes[l] = src + sp.plane(src_n, c0 + l);
                diffs[l] = diff + dp.plane(diff_n, c0 + l);
            }
            for (size_t y = b; y < e; ++y)
                for (size_t x = 0; x < ow; ++x) {
                    const auto& pt = point(y * ow + x);
                    if (!use(pt))
                        continue;
                    // tap(): the pixel's offset, or -1 for `scalar` (CONSTANT's value).
                    ptrdiff_t off[2][2];
                    for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 2; ++j)
                            off[i][j] = pt.row[i] < 0 || pt.col[j] < 0
                                                ? -1
                                                : sp.at(pt.row[i], pt.col[j]);
                    const ptrdiff_t at = dp.at(static_cast<int64_t>(y), static_cast<int64_t>(x));
                    double& gx = out[(y * ow + x) * 2];
                    double& gy = out[(y * ow + x) * 2 + 1];
                    for (size_t l = 0; l < count; ++l) {
                        double v[2][2];
                        for (int i = 0; i < 2; ++i)
                            for (int j = 0; j < 2; ++j)
                                v[i][j] = off[i][j] < 0 ? scalar : planes[l][off[i][j]];
                        auto [sx, sy] = slope(pt, v, diffs[l][at]);
                        gx += sx;
                        gy += sy;
                    }
                }
        }
    };
    if (dp.s[3] == 1) {
        // Chunks of kRows rows: their tables and sums stay in L1 beside the plane of the channel
        // (1, 4 and 16 rows measured alike).
        constexpr size_t kRows = 4;
        const size_t chunks = (oh + kRows - 1) / kRows;
        parallel_ranges(
                chunks, oh * ow * (channels * 8 + 16), kParallelGrain, [&](size_t b, size_t e) {
                    SlopeTable t(kRows * ow);
                    std::vector<double> gx(kRows * ow), gy(kRows * ow);
                    for (size_t u = b; u < e; ++u) {
                        const size_t y0 = u * kRows, y1 = std::min(oh, y0 + kRows);
                        const size_t at = y0 * ow, n = (y1 - y0) * ow;
                        if (!t.fill(point, at, n, sp, use)) {
                            one_by_one(y0, y1);
                            continue;
                        }
                        const SlopeRow rows{{t.off[0].data(), t.off[1].data(), t.off[2].data(),
                                             t.off[3].data()},
                                            t.fx.data(),
                                            t.fy.data(),
                                            t.use.data(),
                                            n};
                        slopes_f64(rows, ow, src + sp.plane(src_n, 0), sp.s[1],
                                   diff + dp.plane(diff_n, 0) + dp.at(static_cast<int64_t>(y0), 0),
                                   dp.s[2], dp.s[1], channels, scalar, gx.data(), gy.data());
                        for (size_t i = 0; i < n; ++i) {
                            out[(at + i) * 2] = gx[i];
                            out[(at + i) * 2 + 1] = gy[i];
                        }
                    }
                });
        return;
    }
    parallel_ranges(oh, oh * ow * (channels * 16 + 16), kParallelGrain, one_by_one);
}

}  // namespace neomeg::dnn::x86::warp_x86
