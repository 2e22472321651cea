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
#include <cstdint>
#include <vector>

#include "src/x86/depthwise_hwy.h"

namespace neomeg::dnn::x86 {

// Which (diff element, tap) pairs every input row and phase sums: the same for every channel, so
// built once per call (dw_grad_data_gather_taps). Tap k of row iy, phase px is taps[k] for k in
// [start[iy * sw + px], start[iy * sw + px + 1]): diff's element at off (from the channel's first
// diff plane, plus the phase column) times weight wi of the channel's; its offset c along diff's
// row less cmin indexes its edge mask.
struct DwGatherTaps {
    struct Tap {
        ptrdiff_t off;
        uint32_t wi, ci;
    };
    std::vector<Tap> taps;
    std::vector<uint32_t> start;
    ptrdiff_t cmin = 0, cmax = 0;
};

// Whether dw_grad_data_gather takes these taps.
bool dw_grad_data_gather_supported(const DwTaps& t);

// The taps of dx(iy, ix) = sum over m < mult and taps (ky, kx) with iy + top == oy * sh + ky * dh
// and ix + left == ox * sw + kx * dw (0 <= oy < oh; the columns ox outside diff's row are masked
// by dw_grad_data_gather) of w[m * kh * kw + ky * kw + kx] * diff_m(oy, ox), for iy < h; diff_m's
// rows are `row` apart and the m planes `plane` apart.
DwGatherTaps dw_grad_data_gather_taps(const DwTaps& t, size_t top, size_t left, size_t mult,
                                      ptrdiff_t plane, ptrdiff_t row, size_t oh, size_t h);

// One channel's dx (h x width, rows dx_row apart; positions no window reaches get 0) from its
// first diff plane dy (rows ow wide at most) and weights w.
void dw_grad_data_gather(const DwGatherTaps& taps, const DwTaps& t, const float* dy, size_t ow,
                         const float* w, float* dx, ptrdiff_t dx_row, size_t h, size_t width);

}  // namespace neomeg::dnn::x86
