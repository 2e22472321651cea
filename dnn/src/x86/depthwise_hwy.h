// The vector loops of the depthwise convolution (depthwise_conv.cpp): one channel's plane at a
// time, read from a zero-padded copy of it, so that no loop tests for the border. A stride along
// W is taken out of the loops by splitting the copy's columns by phase (column c lands in the
// phase c % sw, at c / sw): every tap then reads a contiguous run of the copy.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// The padded copy P of a plane: P(r, c) at data[(c % sw) * phase + r * row + c / sw]. Its buffer
// extends at least kDwSlack floats past the last element, so that a vector may read past it.
struct DwPadded {
    const float* data;
    size_t row, phase, sw;
};

inline constexpr size_t kDwSlack = 64;

// The taps' geometry: kernel size, stride and dilation (in P's rows and columns).
struct DwTaps {
    size_t kh, kw, sh, sw, dh, dw;
};

// out(oy, ox) = [out(oy, ox) +] sum over taps (ky, kx) of w[ky * kw + kx] *
// P(oy * sh + ky * dh, ox * sw + kx * dw), for oy < oh, ox < ow; out's rows are out_row apart.
void dw_correlate(const DwPadded& p, const DwTaps& t, const float* w, float* out, ptrdiff_t out_row,
                  size_t oh, size_t ow, bool accumulate);

// P(oy * sh + ky * dh, ox * sw + kx * dw) += w[ky * kw + kx] * diff(oy, ox) for every tap, oy < oh,
// ox < ow: the transpose of dw_correlate, for backward data with a stride (P writable, as `p.data`
// points into the caller's buffer); diff's rows are diff_row apart.
void dw_scatter(const DwPadded& p, const DwTaps& t, const float* w, const float* diff,
                ptrdiff_t diff_row, size_t oh, size_t ow);

// g[ky * kw + kx] += sum over oy < oh, ox < ow of diff(oy, ox) * P(oy * sh + ky * dh,
// ox * sw + kx * dw): the filter's gradient from one plane; diff's rows are diff_row apart.
void dw_filter_grad(const DwPadded& p, const DwTaps& t, const float* diff, ptrdiff_t diff_row,
                    size_t oh, size_t ow, double* g);

}  // namespace neomeg::dnn::x86
