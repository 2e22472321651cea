// The depthwise convolution's filter gradient on channel-blocked src and diff (ChannelBlock's
// layout, contiguous), by our own loop (Highway, the instruction set chosen at run time): a
// block's b channels are adjacent in memory, so one vector holds a tap's products for b (or, on
// AVX-512 with 16-channel blocks, half of them) channels at once, with no gather and no reorder.
// oneDNN's kernel for this (jit_dw on nChw8c/16c) ran at 0.91x of the plain primitive and 1.5x
// the time of our plain loops at batch 32 (docs/x86-backend.md).
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// A depthwise convolution (one filter per channel) over blocked (N, Cb, [H,] W, b) tensors; 1-D
// has ih = oh = kh = 1, sh = dh = 1, ph = 0.
struct DwBlockedGeom {
    size_t n = 0, blocks = 0, block = 0;
    size_t ih = 1, iw = 0, oh = 1, ow = 0, kh = 1, kw = 0;
    ptrdiff_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// For channel block `cb`: acc[(ky * kw + kx) * block + lane] = the sum over images and output
// positions of dy * x at that tap (cross-correlation order), each image's sum in float32 added in
// double.
void dw_blocked_filter_grad(const DwBlockedGeom& g, const float* x, const float* dy, size_t cb,
                            double* acc);

}  // namespace neomeg::dnn::x86
