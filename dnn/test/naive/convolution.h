// Test helpers shared by the convolution, ConvBias and pooling tests: a second formulation of
// convolution (im2col + a plain matrix product, written independently of the kernels), inner
// products for adjoint checks, and a checker for error type and message.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "common/checker.h"
#include "neomeg/dnn/operators/convolution.h"

namespace neomeg::dnn::test {

inline param::Convolution conv_param(std::vector<int32_t> stride, std::vector<int32_t> padding,
                                     std::vector<int32_t> dilation, uint32_t group = 1,
                                     bool flip = false) {
    param::Convolution p;
    p.stride = std::move(stride);
    p.padding = std::move(padding);
    p.dilation = std::move(dilation);
    p.group = group;
    p.mode = flip ? param::Convolution::Mode::CONVOLUTION
                  : param::Convolution::Mode::CROSS_CORRELATION;
    return p;
}

// ConvBias's param of the same geometry and mode, with nonlinearity `act`.
inline param::ConvBias conv_bias_param(const param::Convolution& c,
                                       param::ConvBias::NonlineMode act) {
    param::ConvBias p;
    p.nonlineMode = act;
    p.mode = c.mode == param::Convolution::Mode::CONVOLUTION
                     ? param::ConvBias::Mode::CONVOLUTION
                     : param::ConvBias::Mode::CROSS_CORRELATION;
    p.stride = c.stride;
    p.padding = c.padding;
    p.dilation = c.dilation;
    p.group = c.group;
    return p;
}

// One geometry: src (N, C, spatial...), filter (OC, C/group, k...) and params.
struct ConvCase {
    TensorShape src, filter;
    param::Convolution p;
};

inline TensorShape conv_dst_shape(const ConvCase& c) {
    TensorShape d = c.src;
    d[1] = c.filter[0];
    for (size_t i = 0; i + 2 < c.src.ndim; ++i) {
        size_t extent = static_cast<size_t>(c.p.dilation[i]) * (c.filter[2 + i] - 1) + 1;
        d[2 + i] = (c.src[2 + i] + 2 * static_cast<size_t>(c.p.padding[i]) - extent) /
                           static_cast<size_t>(c.p.stride[i]) +
                   1;
    }
    return d;
}

// Every case followed by itself in CONVOLUTION mode.
inline std::vector<ConvCase> conv_both_modes(const std::vector<ConvCase>& cases) {
    std::vector<ConvCase> all;
    for (ConvCase k : cases) {
        all.push_back(k);
        k.p.mode = param::Convolution::Mode::CONVOLUTION;
        all.push_back(k);
    }
    return all;
}

// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter of each case on
// `handle` against naive, on contiguous and on padded (non-contiguous) operands.
inline void check_conv_forward(Handle* handle, const std::vector<ConvCase>& cases) {
    for (const ConvCase& k : cases) {
        Checker<ConvolutionForward> c(handle);
        c.set_param(k.p).execs({k.src, k.filter});
        c.set_noncontiguous(true).execs({k.src, k.filter});
    }
}

inline void check_conv_backward_data(Handle* handle, const std::vector<ConvCase>& cases) {
    for (const ConvCase& k : cases) {
        Checker<ConvolutionBackwardData> c(handle);
        c.set_param(k.p).set_output_shapes({k.src}).execs({k.filter, conv_dst_shape(k)});
        c.set_noncontiguous(true).execs({k.filter, conv_dst_shape(k)});
    }
}

inline void check_conv_backward_filter(Handle* handle, const std::vector<ConvCase>& cases) {
    for (const ConvCase& k : cases) {
        Checker<ConvolutionBackwardFilter> c(handle);
        c.set_param(k.p).set_output_shapes({k.filter}).execs({k.src, conv_dst_shape(k)});
        c.set_noncontiguous(true).execs({k.src, conv_dst_shape(k)});
    }
}

// Mixed-radix decode of a row-major flat index.
inline std::vector<size_t> unflatten(size_t flat, const std::vector<size_t>& dims) {
    std::vector<size_t> idx(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
        idx[d] = flat % dims[d];
        flat /= dims[d];
    }
    return idx;
}

// Convolution as im2col + matrix product per (batch, group), in double; returns float32.
// CONVOLUTION mode reverses each flattened kernel, which flips every spatial dim at once.
inline HostTensor conv_im2col(const HostTensor& x, const HostTensor& w,
                              const param::Convolution& p) {
    const size_t sp = x.shape().ndim - 2, N = x.shape()[0], C = x.shape()[1], OC = w.shape()[0],
                 ICg = w.shape()[1], G = p.group, OCg = OC / G;
    std::vector<size_t> in(sp), k(sp), out(sp);
    size_t K = 1, O = 1, I = 1;
    for (size_t d = 0; d < sp; ++d) {
        in[d] = x.shape()[2 + d];
        k[d] = w.shape()[2 + d];
        out[d] = (in[d] + 2 * p.padding[d] - p.dilation[d] * (k[d] - 1) - 1) / p.stride[d] + 1;
        K *= k[d];
        O *= out[d];
        I *= in[d];
    }
    auto xv = x.values(), wv = w.values();
    if (p.mode == param::Convolution::Mode::CONVOLUTION)
        for (size_t b = 0; b < OC * ICg; ++b)
            std::reverse(wv.begin() + b * K, wv.begin() + (b + 1) * K);
    std::vector<double> y(N * OC * O, 0.0);
    std::vector<double> cols(ICg * K * O);
    for (size_t n = 0; n < N; ++n) {
        for (size_t g = 0; g < G; ++g) {
            for (size_t row = 0; row < ICg * K; ++row) {
                size_t c = row / K;
                auto kk = unflatten(row % K, k);
                for (size_t col = 0; col < O; ++col) {
                    auto oo = unflatten(col, out);
                    size_t flat = 0;
                    bool inside = true;
                    for (size_t d = 0; d < sp; ++d) {
                        long pos = long(oo[d] * p.stride[d]) - p.padding[d] +
                                   long(kk[d] * p.dilation[d]);
                        inside = inside && pos >= 0 && pos < long(in[d]);
                        flat = flat * in[d] + (inside ? size_t(pos) : 0);
                    }
                    cols[row * O + col] = inside ? xv[(n * C + g * ICg + c) * I + flat] : 0.0;
                }
            }
            for (size_t m = 0; m < OCg; ++m) {
                size_t oc = g * OCg + m;
                for (size_t col = 0; col < O; ++col) {
                    double s = 0;
                    for (size_t j = 0; j < ICg * K; ++j)
                        s += wv[oc * ICg * K + j] * cols[j * O + col];
                    y[(n * OC + oc) * O + col] = s;
                }
            }
        }
    }
    TensorShape ys;
    ys.ndim = 2 + sp;
    ys[0] = N;
    ys[1] = OC;
    for (size_t d = 0; d < sp; ++d)
        ys[2 + d] = out[d];
    return HostTensor::from(ys, y);
}

inline double dot(const HostTensor& a, const HostTensor& b) {
    auto va = a.values(), vb = b.values();
    EXPECT_EQ(va.size(), vb.size());
    double s = 0;
    for (size_t i = 0; i < va.size() && i < vb.size(); ++i)
        s += va[i] * vb[i];
    return s;
}

inline HostTensor random_tensor(const TensorShape& shape, std::mt19937& rng,
                                DType dt = dtype::Float32, double lo = -1, double hi = 1) {
    HostTensor t(shape, dt);
    fill_uniform(t, lo, hi, rng);
    return t;
}

// The same values in another dtype (rounded to it).
inline HostTensor as_dtype(const HostTensor& t, DType dt) {
    return HostTensor::from(t.shape(), t.values(), dt);
}

// How an error message prints a contiguous layout of this shape.
inline std::string lstr(const TensorShape& s, DType dt = dtype::Float32) {
    return TensorLayout(s, dt).to_string();
}

// f must throw Err whose message contains every needle.
template <class Err>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
    try {
        f();
        ADD_FAILURE() << "no exception; expected one containing " << needles[0];
    } catch (const Err& e) {
        std::string msg = e.what();
        for (auto& s : needles)
            EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' not in: " << msg;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
    }
}

}  // namespace neomeg::dnn::test
