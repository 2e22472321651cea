// MAX pooling's backward in our own vector loops (Highway) where each position holds `lanes`
// contiguous values (channels-last tensors: the channels; channel-blocked ones seen as planes: a
// block), so that a vector's lanes are independent windows: per window, the winner (naive's rule:
// its first NaN, else its first maximum; padding never counts) is found by compares over its taps
// and its gradient goes where it belongs at once. Two window shapes, each element written once
// with no zero fill and no scatter in memory:
// - windows that tile the plane (stride == window, no padding; 2x2/2): each window's taps are
//   written from its gradient alone, the rows and columns past the last window +0;
// - 3x3 windows of stride 2 and padding 1: even rows and columns belong to one window, odd
//   columns add the window before's share (a buffer of three vectors per lane chunk), odd rows the
//   window row before's (one carry row), so every element is summed where it is made.
// src, diff and grad each stream through memory once. bfloat16 (3x3/2 pad 1 only) runs the same
// loop on its bits: loaded as 32-bit pairs of lanes and widened, compared and summed in float32,
// each element's sum rounded once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/x86/max_pool_hwy.h"

namespace neomeg::dnn::x86 {

// The most taps of a tiling window the loop takes.
inline constexpr size_t kMaxPoolLanesBackwardTaps = 64;

// Whether max_pool_lanes_backward takes windows g: no depth (g.k[0] == g.s[0] == 1, g.p[0] ==
// 0: depth slices apart), and tiling or 3x3/2 pad 1 over height and width.
bool max_pool_lanes_backward_takes(const PoolDims& g);

// One image: src(z, y, x, l) at src[z * ss[0] + y * ss[1] + x * ss[2] + l], diff (g.out's shape)
// with ys and grad (src's shape) with gs likewise; g as max_pool_lanes_backward_takes allows. An
// element's gradients add in float32 in naive's order (output row-major) from +0 (a -0 gradient
// gives +0), which rounds as naive's double sum does where at most two windows give it one; the
// elements of odd row and column of 3x3/2 windows take four and may differ in the last bit.
void max_pool_lanes_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                             const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                             const PoolDims& g);

// Whether max_pool_lanes_backward_bf16 takes windows g: 3x3/2 pad 1 over height and width, no
// depth window.
bool max_pool_lanes_backward_bf16_takes(const PoolDims& g);

// max_pool_lanes_backward on bfloat16 (its bits): compared and summed as float32 (the values
// exactly), each element's sum rounded to bfloat16 once as naive converts its own (nearest even,
// a NaN to the quiet 0x7FC0 with its sign). stream: grad is large (the whole call's, past the
// caches): whole cache lines of it are stored non-temporally where they are aligned.
void max_pool_lanes_backward_bf16(const uint16_t* src, const ptrdiff_t* ss, const uint16_t* diff,
                                  const ptrdiff_t* ys, uint16_t* grad, const ptrdiff_t* gs,
                                  size_t lanes, const PoolDims& g, bool stream);

}  // namespace neomeg::dnn::x86
