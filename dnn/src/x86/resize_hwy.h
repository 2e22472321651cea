// Resize's float32 loops in vectors (Highway), keeping naive's bits (resize.cpp): every product and
// sum is the double operation naive does, in naive's order, with no fused multiply-add, and one
// rounding to float per element.
// - The forward runs along a dst row: each output column's source columns (offsets into a source
//   row) and weight are computed once per call, the taps gathered, the four terms summed in double
//   lanes.
// - The backward adds every diff element onto its four taps in a fixed order, so one plane's sums
//   cannot be split across lanes without changing their bits; it runs one plane per lane instead,
//   a group of planes at once, each lane repeating naive's sequence for its plane.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// One dst row of LINEAR: out[x] = (1 - hw) * (1 - ww[x]) * r0[c0[x]] + (1 - hw) * ww[x] *
// r0[c1[x]] + hw * (1 - ww[x]) * r1[c0[x]] + hw * ww[x] * r1[c1[x]], summed from 0 in that order
// in double. NEAREST (nearest == true): out[x] = r0[c0[x]].
void resize_row(const float* r0, const float* r1, double hw, const int32_t* c0, const int32_t* c1,
                const double* ww, bool nearest, float* out, size_t n);

// How many planes resize_backward_planes takes at once on this CPU.
size_t resize_backward_lanes();

// The taps of the backward along one axis: output position o adds onto inputs i0[o] and i1[o]
// with weights (1 - w[o]) and w[o].
struct ResizeAxisTaps {
    const int32_t* i0;
    const int32_t* i1;
    const double* w;
};

// resize_backward_lanes() planes at once: plane l's diff at dy + dy_plane[l] (element (oy, ox) at
// oy * dy_row + ox * dy_col), its gradient at grad + g_plane[l] likewise; `acc` holds
// in_h * in_w * lanes doubles. Each plane gets naive's sums: for oy, for ox, its four terms.
void resize_backward_planes(const float* dy, const int32_t* dy_plane, ptrdiff_t dy_row,
                            ptrdiff_t dy_col, size_t out_h, size_t out_w, ResizeAxisTaps h,
                            ResizeAxisTaps w, bool nearest, double* acc, float* grad,
                            const int32_t* g_plane, ptrdiff_t g_row, ptrdiff_t g_col, size_t in_h,
                            size_t in_w);

}  // namespace neomeg::dnn::x86
