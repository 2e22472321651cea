// Test helpers for ChannelBlock's layout, shared by the naive and x86 suites: the blocking
// written out by index arithmetic (a formulation independent of the kernels), and params.
#pragma once

#include "naive/convolution.h"
#include "neomeg/dnn/params/convolution.h"

namespace neomeg::dnn::test {

// plain (N, C, spatial...) as (N, ceil(C/block), spatial..., block), zeros past C.
inline HostTensor block_ref(const HostTensor& plain, size_t block) {
    const TensorShape& s = plain.shape();
    size_t n = s[0], c = s[1], cb = (c + block - 1) / block;
    size_t inner = s.total_nr_elems() / std::max<size_t>(1, n * c);
    TensorShape b = s;
    b.ndim = s.ndim + 1;
    b[1] = cb;
    b[s.ndim] = block;
    std::vector<double> v = plain.values(), out(b.total_nr_elems(), 0.0);
    for (size_t i = 0; i < n; ++i)
        for (size_t ch = 0; ch < c; ++ch)
            for (size_t p = 0; p < inner; ++p)
                out[((i * cb + ch / block) * inner + p) * block + ch % block] =
                        v[(i * c + ch) * inner + p];
    return HostTensor::from(b, out, plain.dtype());
}

inline param::ConvBiasBlocked blocked_conv_param(const param::Convolution& c,
                                                 param::ConvBias::NonlineMode act, size_t block,
                                                 bool filter_is_const = false) {
    param::ConvBiasBlocked p;
    p.nonlineMode = static_cast<param::ConvBiasBlocked::NonlineMode>(act);
    p.mode = static_cast<param::ConvBiasBlocked::Mode>(c.mode);
    p.stride = c.stride;
    p.padding = c.padding;
    p.dilation = c.dilation;
    p.group = c.group;
    p.block = static_cast<uint32_t>(block);
    p.filter_is_const = filter_is_const;
    return p;
}

// An input of ndim 0: absent bias or z.
inline HostTensor absent_tensor() {
    return HostTensor(TensorLayout(TensorShape{}, dtype::Float32));
}

}  // namespace neomeg::dnn::test
