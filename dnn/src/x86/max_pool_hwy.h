// MAX pooling's forward in our own vector loops (Highway), with naive's rule for NaN: a window's
// maximum is its first NaN if it holds one (oneDNN's kernels compare with `<` and so skip NaNs,
// which naive and PyTorch propagate). Padding never counts. Two loops, by which axis is
// contiguous: `max_pool_rows` vectors along a plane's W (plain NC[D]HW), `max_pool_lanes` vectors
// along a contiguous axis of lanes at each position (channels-last: the channels; blocked: a
// channel block). bfloat16 (its bits) runs the same loops, widened in registers and compared as
// float32 (exactly), the maxima written back as their own bits; where its lanes are contiguous it
// reads them as 32-bit pairs (even lanes widened by a shift, odd ones by a mask), on AVX-512 a
// block of 16 or 8 lanes in 256- or 128-bit vectors, and 3x3 windows of stride 2 read each
// column once for the two positions that share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace neomeg::dnn::x86 {

// A window's geometry over (depth, height, width); 1-D and 2-D pooling have leading extents of 1
// (window 1, stride 1, padding 0).
struct PoolDims {
    size_t in[3], out[3], k[3], s[3], p[3];

    // The input range [first, last) that output position o's window covers along axis, padding
    // left out.
    std::pair<ptrdiff_t, ptrdiff_t> window(size_t axis, size_t o) const {
        ptrdiff_t start = static_cast<ptrdiff_t>(o * s[axis]) - static_cast<ptrdiff_t>(p[axis]);
        ptrdiff_t end =
                std::min(start + static_cast<ptrdiff_t>(k[axis]), static_cast<ptrdiff_t>(in[axis]));
        return {std::max<ptrdiff_t>(start, 0), end};
    }
};

// One plane: src(z, y, x) at src[z * ss[0] + y * ss[1] + x], dst(z, y, x) at
// dst[z * ds[0] + y * ds[1] + x].
void max_pool_rows(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                   const PoolDims& g);

// One image of positions holding `lanes` contiguous values each: src(z, y, x, l) at
// src[z * ss[0] + y * ss[1] + x * ss[2] + l], dst likewise with ds.
void max_pool_lanes(const float* src, const ptrdiff_t* ss, float* dst, const ptrdiff_t* ds,
                    size_t lanes, const PoolDims& g);

// max_pool_rows on bfloat16 (its bits), compared as float32 (exactly).
void max_pool_rows_bf16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst,
                        const ptrdiff_t* ds, const PoolDims& g);

// max_pool_lanes on bfloat16 (its bits), compared as float32 (exactly).
void max_pool_lanes_bf16(const uint16_t* src, const ptrdiff_t* ss, uint16_t* dst,
                         const ptrdiff_t* ds, size_t lanes, const PoolDims& g);

// Whether any of the n floats at p (contiguous) is a NaN or -inf: the MAX backward's dst values
// whose windows oneDNN's kernels get wrong (they skip NaNs, and give a window of -inf no
// gradient), max_pool_plan.h.
bool any_nan_or_minus_inf(const float* p, size_t n);

// The same for n bfloat16 values (their bits) at p (contiguous).
bool any_nan_or_minus_inf_bf16(const uint16_t* p, size_t n);

}  // namespace neomeg::dnn::x86
