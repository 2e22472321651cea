// Shape rules shared by the convolution operators (forward, both backwards, ConvBias) and their
// kernels. Every spatial quantity is padded to three dims (D, H, W) with size 1, stride 1, padding
// 0 and dilation 1 in the dims a lower-rank convolution lacks, so one loop nest serves 1-D, 2-D and
// 3-D.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn {

inline constexpr size_t kMaxConvSpatial = 3;

// The fields every convolution param set has, whichever op owns it.
struct ConvArgs {
    bool flip = false;  // CONVOLUTION mode
    std::vector<int32_t> stride, padding, dilation;
    uint32_t group = 1;

    template <class P>
    static ConvArgs of(const P& p) {
        return {p.mode == P::Mode::CONVOLUTION, p.stride, p.padding, p.dilation, p.group};
    }
};

struct ConvGeometry {
    size_t spatial = 0;                                         // 1, 2 or 3
    size_t n = 0, ic = 0, oc = 0, group = 1, icg = 0, ocg = 0;  // icg/ocg: channels per group
    std::array<size_t, kMaxConvSpatial> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
    std::array<ptrdiff_t, kMaxConvSpatial> stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
    bool flip = false;

    // Position in the (unpadded) input that output position o and kernel tap t read; it may lie
    // in the padding (< 0 or >= in).
    ptrdiff_t in_pos(size_t d, size_t o, size_t t) const {
        size_t tap = flip ? k[d] - 1 - t : t;
        return static_cast<ptrdiff_t>(o) * stride[d] - pad[d] +
               static_cast<ptrdiff_t>(tap) * dil[d];
    }
};

// A 2-D geometry's sizes as signed integers, for loops whose positions go negative in the
// padding (the deformable and region-restricted convolutions' naive and x86 kernels).
struct ConvDims2D {
    long N, IC, IH, IW, OC, OH, OW, FH, FW, K, icg, ocg, G, sh, sw, ph, pw, dh, dw;
    explicit ConvDims2D(const ConvGeometry& g)
        : N(long(g.n)),
          IC(long(g.ic)),
          IH(long(g.in[1])),
          IW(long(g.in[2])),
          OC(long(g.oc)),
          OH(long(g.out[1])),
          OW(long(g.out[2])),
          FH(long(g.k[1])),
          FW(long(g.k[2])),
          K(FH * FW),
          icg(long(g.icg)),
          ocg(long(g.ocg)),
          G(long(g.group)),
          sh(g.stride[1]),
          sw(g.stride[2]),
          ph(g.pad[1]),
          pw(g.pad[2]),
          dh(g.dil[1]),
          dw(g.dil[2]) {}
};

// Checks that stride, padding and dilation have one entry per spatial dim and sane values, and
// that group >= 1 (ParamError naming `op`).
void conv_check_args(const OperatorBase& op, const ConvArgs& args, size_t spatial);
// Validates src and filter of a forward convolution (ranks, dtypes, channels, group, params, the
// dilated kernel fitting the padded input) and returns the geometry; errors name `op`, its params
// and the layouts.
ConvGeometry conv_forward_geometry(const OperatorBase& op, const ConvArgs& args,
                                   const TensorLayout& src, const TensorLayout& filter);
// The contiguous dst layout of a geometry, in src's dtype.
TensorLayout conv_dst_layout(const ConvGeometry& g, DType dtype);

// Strides of an (N, C, spatial...) layout spread over (N, C, D, H, W); a dim the rank lacks gets
// stride 0, so it can be indexed with 0 only.
std::array<ptrdiff_t, 5> conv_strides5(const TensorLayout& l);

}  // namespace neomeg::dnn
