// The convolution sum shared by the naive ConvolutionForward and ConvBias kernels. Every tensor is
// addressed through its own strides (spread over N, C, D, H, W by conv_strides5), so any strided,
// broadcast or negatively strided layout works; sums are taken in double.
#pragma once

#include <algorithm>
#include <cmath>

#include "neomeg/dnn/params/convolution.h"
#include "src/common/convolution_geometry.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {

template <class T>
double load_as_double(const TensorND& t, ptrdiff_t off) {
    return static_cast<double>(static_cast<compute_type_t<T>>(elem<T>(t, off)));
}

template <class T>
void store_from_double(const TensorND& t, ptrdiff_t off, double v) {
    elem<T>(t, off) = static_cast<T>(static_cast<compute_type_t<T>>(v));
}

// ConvBias's nonlinearity (ConvBiasBlocked's has the same members), in double.
inline double conv_bias_nonlinearity(param::ConvBias::NonlineMode mode, double x) {
    using Mode = param::ConvBias::NonlineMode;
    switch (mode) {
        case Mode::IDENTITY:
            return x;
        case Mode::RELU:
            return std::max(x, 0.0);
        case Mode::SIGMOID:
            return 1 / (1 + std::exp(-x));
        case Mode::H_SWISH:
            return x * std::clamp(x + 3, 0.0, 6.0) / 6;
    }
    return x;
}

// Calls f(p) for every position p (a std::array of three indices) of a D x H x W extent.
template <class F>
void for_each_pos3(const std::array<size_t, kMaxConvSpatial>& extent, F&& f) {
    std::array<size_t, kMaxConvSpatial> p{};
    for (p[0] = 0; p[0] < extent[0]; ++p[0])
        for (p[1] = 0; p[1] < extent[1]; ++p[1])
            for (p[2] = 0; p[2] < extent[2]; ++p[2])
                f(static_cast<const std::array<size_t, kMaxConvSpatial>&>(p));
}

// Offset of (n, c, p) under strides from conv_strides5.
inline ptrdiff_t offset5(const std::array<ptrdiff_t, 5>& s, size_t n, size_t c,
                         const std::array<size_t, kMaxConvSpatial>& p) {
    return static_cast<ptrdiff_t>(n) * s[0] + static_cast<ptrdiff_t>(c) * s[1] +
           static_cast<ptrdiff_t>(p[0]) * s[2] + static_cast<ptrdiff_t>(p[1]) * s[3] +
           static_cast<ptrdiff_t>(p[2]) * s[4];
}

// Calls emit(n, oc, out_pos, sum) once per output element, in row-major order, with the sum over
// the group's input channels and the kernel taps that land inside the (unpadded) input.
// TF is the filter's element type (T by default); src_zero is subtracted from every src element
// (a Quantized8Asymm src's zero point; padding adds nothing, i.e. the value 0).
template <class T, class TF = T, class Emit>
void conv_forward_sums(const ConvGeometry& g, const TensorND& src, const TensorND& filter,
                       Emit&& emit, double src_zero = 0) {
    const auto ss = conv_strides5(src.layout), fs = conv_strides5(filter.layout);
    for (size_t n = 0; n < g.n; ++n) {
        for (size_t oc = 0; oc < g.oc; ++oc) {
            const size_t ic0 = oc / g.ocg * g.icg;
            for_each_pos3(g.out, [&](const auto& o) {
                double sum = 0;
                for (size_t c = 0; c < g.icg; ++c) {
                    for_each_pos3(g.k, [&](const auto& t) {
                        std::array<size_t, kMaxConvSpatial> i{};
                        for (size_t d = 0; d < kMaxConvSpatial; ++d) {
                            ptrdiff_t pos = g.in_pos(d, o[d], t[d]);
                            if (pos < 0 || pos >= static_cast<ptrdiff_t>(g.in[d]))
                                return;
                            i[d] = static_cast<size_t>(pos);
                        }
                        sum += (load_as_double<T>(src, offset5(ss, n, ic0 + c, i)) - src_zero) *
                               load_as_double<TF>(filter, offset5(fs, oc, c, t));
                    });
                }
                emit(n, oc, o, sum);
            });
        }
    }
}

}  // namespace neomeg::dnn::naive
