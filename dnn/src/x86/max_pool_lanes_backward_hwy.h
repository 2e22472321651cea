// MAX pooling's backward in our own vector loops (Highway) where each position holds `lanes`
// contiguous values (channels-last tensors: the channels; channel-blocked ones seen as planes: a
// block), so that a vector's lanes are independent windows. Per output row, each window's winner
// (naive's rule: its first NaN, else its first maximum; padding never counts) is found per lane
// by compares over its taps and kept as the tap's index; then each input row's gradient is
// gathered, position by position, from the windows that hold it (diff where that window's winner
// is this tap), summed in window order and written once: no zero fill, no scatter. The winners of
// the few output rows an input row needs stay in a small buffer, so src, diff and grad each
// stream through memory once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/x86/max_pool_hwy.h"

namespace neomeg::dnn::x86 {

// The most taps (window height x width) the loop takes.
inline constexpr size_t kMaxPoolLanesBackwardTaps = 64;

// One image: src(z, y, x, l) at src[z * ss[0] + y * ss[1] + x * ss[2] + l], diff (g.out's shape)
// with ys and grad (src's shape) with gs likewise. The window has no depth (g.k[0] == g.s[0] ==
// 1, g.p[0] == 0): depth slices are apart. An element's gradients add in float32 in naive's order
// (output row-major), which rounds as naive's double sum does where at most two windows give it
// one; with more (3x3/2: the elements of odd row and column) it may differ in the last bit.
void max_pool_lanes_backward(const float* src, const ptrdiff_t* ss, const float* diff,
                             const ptrdiff_t* ys, float* grad, const ptrdiff_t* gs, size_t lanes,
                             const PoolDims& g);

}  // namespace neomeg::dnn::x86
