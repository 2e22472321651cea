// The depthwise convolution's loops that read a channel's plane in place (depthwise_conv.cpp),
// without the zero-padded copy of depthwise_hwy.h: the window's columns outside the plane are
// masked off in the loads themselves (AVX2 and AVX-512 masked loads touch no masked-off memory),
// its rows outside the plane skipped. Each pass computes a tile of up to four output rows by up
// to four vectors, loading every input row's vectors once for all the tile's rows they reach; a
// stride of 2 along W reads pairs of vectors and keeps their even lanes. Other targets, strides
// and wider kernels take depthwise_hwy.h's loops (the *_supported functions say which). 3x3
// windows with one column of padding go first to depthwise_3x3_avx512_hwy.h on AVX-512 (the
// stride-1 correlation only for a tensor in cache), then the stride-2 correlation (AVX2 and
// AVX-512) and the filter gradient (AVX2) to depthwise_3x3_avx2_hwy.h.
#pragma once

#include <algorithm>
#include <cstddef>

#include "src/x86/depthwise_hwy.h"

namespace neomeg::dnn::x86 {

// A plane X read in place: X(r, c) at data[r * row + c] for r < h, c < w, 0 outside. Output
// (oy, ox)'s window corner is X(oy * sh - top, ox * sw - left).
struct DwSource {
    const float* data;
    ptrdiff_t row;
    size_t h, w;
    ptrdiff_t top, left;
    // Whether the caller expects the tensor in cache (a small batch): there an aligned copy of a
    // 3x3 plane (depthwise_aligned_hwy.h) is faster than masked loads in place, while on planes
    // streaming from memory the copy delays the loads the in-place loop overlaps with arithmetic.
    bool cached = false;
    // The plane (same geometry) the caller reads next, or null: the correlation asks for its
    // lines while it works on this one, as the hardware prefetchers, which stop at page
    // boundaries, start late on every plane (dw_direct_correlate only).
    const float* next = nullptr;
};

// Asks for the lines of rows [r0, r1) of x.next, the plane read after this one (the hardware
// prefetchers stop at each page); the 3x3 loops call it as they go down a plane.
inline void prefetch_next_rows(const DwSource& x, ptrdiff_t r0, ptrdiff_t r1) {
    if (x.next == nullptr)
        return;
    r0 = std::max<ptrdiff_t>(r0, 0);
    r1 = std::min<ptrdiff_t>(r1, static_cast<ptrdiff_t>(x.h));
    for (ptrdiff_t r = r0; r < r1; ++r) {
        const float* p = x.next + r * x.row;
        for (size_t i = 0; i < x.w; i += 16)
            __builtin_prefetch(p + i);
        __builtin_prefetch(p + x.w - 1);
    }
}

// Whether dw_direct_correlate takes these taps (the CPU's vectors, a stride along W of 1 or 2,
// up to 16 columns).
bool dw_direct_supported(const DwTaps& t);

// out(oy, ox) = [out(oy, ox) +] sum over taps (ky, kx) of w[ky * kw + kx] *
// X(oy * sh + ky * dh - top, ox * sw + kx * dw - left), for oy < oh, ox < ow.
void dw_direct_correlate(const DwSource& x, const DwTaps& t, const float* w, float* out,
                         ptrdiff_t out_row, size_t oh, size_t ow, bool accumulate);

// Whether dw_direct_filter_grad takes these taps (as above, for 1x1 and 3x3 kernels, 5x5 on
// AVX-512).
bool dw_direct_filter_grad_supported(const DwTaps& t);

// g[ky * kw + kx] += sum over oy < oh, ox < ow of diff(oy, ox) *
// X(oy * sh + ky * dh - top, ox * sw + kx * dw - left).
void dw_direct_filter_grad(const DwSource& x, const DwTaps& t, const float* diff,
                           ptrdiff_t diff_row, size_t oh, size_t ow, double* g);

}  // namespace neomeg::dnn::x86
