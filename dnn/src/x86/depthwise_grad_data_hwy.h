// The depthwise convolution's input gradient with a stride (depthwise_conv.cpp), as a gather:
// each input position sums the few (output, tap) pairs that reach it, instead of every output
// scattering its taps into a zeroed padded plane that is then copied out (read-modify-write of
// the plane per tap, and a scalar copy). Along W the input's columns split by phase (ix % sw):
// within a phase the same taps apply and their diff columns are contiguous, so each phase is a
// short correlation of diff, and the phases' vectors interleave into whole rows of the gradient
// (written once, in vectors). Along H each input row sums the rows of diff whose windows reach
// it. A stride along W of 1 or 2, on AVX2 and AVX-512 (masked loads that skip memory); the
// scatter serves the rest.
#pragma once

#include <cstddef>

#include "src/x86/depthwise_hwy.h"

namespace neomeg::dnn::x86 {

// The output side of one input channel: its `mult` planes of diff (rows `row` apart, oh x ow).
struct DwDiffPlanes {
    const float* const* planes;
    size_t mult;
    ptrdiff_t row;
    size_t oh, ow;
};

// Whether dw_grad_data_gather takes these taps with `mult` planes.
bool dw_grad_data_gather_supported(const DwTaps& t, size_t mult);

// dx(iy, ix) = sum over m < mult and taps (ky, kx) with iy + top == oy * sh + ky * dh and
// ix + left == ox * sw + kx * dw (0 <= oy < oh, 0 <= ox < ow) of w[m * kh * kw + ky * kw + kx] *
// diff_m(oy, ox), for iy < h, ix < w; positions no window reaches get 0. dx's rows are dx_row
// apart.
void dw_grad_data_gather(const DwDiffPlanes& dy, const DwTaps& t, size_t top, size_t left,
                         const float* w, float* dx, ptrdiff_t dx_row, size_t h, size_t width);

}  // namespace neomeg::dnn::x86
