// The vector loops of the x86 Remap and WarpPerspective kernels (warp_sampling.h builds their
// tables; Highway, the instruction set chosen at run time). Every product and sum is rounded on
// its own (the file compiles without contraction into fused multiply-adds): the gradients keep
// naive's bits (double, in naive's order per output value), the forward the float32 formula of
// warp_sampling.h at every instruction set and in its scalar tail alike.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// A point's taps for the data gradient: pixel pix[q] (row * iw + col of the gradient's plane;
// -1: no pixel, as CONSTANT's value or NEAREST's unused taps) gets weight w[q] times the diff.
struct ScatterTap {
    int32_t pix[4];
    double w[4];
};

// For each of the n points in order and each tap q in order: acc[pix * count + l] += w[q] * g[i *
// 8 + l], l < count (<= 8): `count` interleaved planes, g the points' diffs of those planes.
void scatter_taps_f64(const ScatterTap* taps, size_t n, const double* g, size_t count, double* acc);

// Rows of points for the map gradient, n = rows * ow of them row-major, as arrays over the
// points: off[q][i] the offset of tap q (0: (row 0, col 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)) in
// a plane of src, -1 for `scalar` (CONSTANT's value); fx, fy the fractions; use[i] 0 where the
// slope is zero (a point not finite, or NEAREST; its offsets must still be valid), else 1.
struct SlopeRow {
    const int32_t* off[4];
    const double* fx;
    const double* fy;
    const double* use;
    size_t n;
};

// gx[i], gy[i]: naive's sums over the channels c < channels, in order, of diff's value at point i
// = (y, x) (diff + c * diff_step + y * diff_row + x) times the bilinear slopes of src's plane c
// (src + c * src_step) at the point; 0 where use[i] is 0. Lanes over a row's points, channel by
// channel.
void slopes_f64(const SlopeRow& points, size_t ow, const float* src, ptrdiff_t src_step,
                const float* diff, ptrdiff_t diff_row, ptrdiff_t diff_step, size_t channels,
                double scalar, double* gx, double* gy);

// A row of n points of the forward's table (warp_sampling.h's TapTable): tap q of point i reads
// offset off[q][i] of a plane with weight w[q][i].
struct SampleRow {
    const int32_t* off[4];
    const float* w[4];
    size_t n;
};

// For each plane l < count and point i < n: dst[l][i * step] = (w0 p[o0] + w1 p[o1]) +
// (w2 p[o2] + w3 p[o3]) with p = planes[l], in float32, each operation rounded; a point's offsets
// and weights read once for the planes. (Lanes over the points gathering their taps were slower:
// 597 against 563 us for the bench's remap on AVX-512, Zen 5.)
void sample_row_f32(const SampleRow& row, const float* const* planes, size_t count,
                    float* const* dst, ptrdiff_t step);

// Lanes the channels-last forward computes at once: the widest vector of float32 (AVX-512).
inline constexpr size_t kWarpChannelBlock = 16;

// The same sums over a channels-last image (pixel p's channels at img + p * cp, cp a multiple of
// kWarpChannelBlock), off[q][i] pixels of it: out[i * cp + c] for i < n, c < cp, one vector load
// per tap and block of channels.
void sample_row_cl_f32(const SampleRow& row, const float* img, size_t cp, float* out);

// out[i] = in[i] rounded to float32 as naive rounds (double_to_float: to nearest, past the range
// to infinity), i < n.
void demote_f64(const double* in, size_t n, float* out);

}  // namespace neomeg::dnn::x86
