// A second formulation of (adaptive) pooling for the tests: for each output element, walk the
// window by mixed-radix decoding and reduce, in double. Written without the kernels' geometry.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "naive/convolution.h"
#include "neomeg/dnn/params/pooling.h"

namespace neomeg::dnn::test {

inline param::Pooling pool_param(param::Pooling::Mode mode, std::vector<int32_t> window,
                                 std::vector<int32_t> stride, std::vector<int32_t> padding) {
    param::Pooling p;
    p.mode = mode;
    p.window = std::move(window);
    p.stride = std::move(stride);
    p.padding = std::move(padding);
    return p;
}

enum class PoolRef { Max, AverageInclPad, AverageExclPad };

// window_of(d, o) gives the [first, last) input range of output o along spatial dim d.
template <class WindowOf>
HostTensor pool_reference(const HostTensor& x, const std::vector<size_t>& out, PoolRef mode,
                          WindowOf&& window_of) {
    const size_t sp = x.shape().ndim - 2, NC = x.shape()[0] * x.shape()[1];
    std::vector<size_t> in(sp);
    size_t I = 1, O = 1;
    for (size_t d = 0; d < sp; ++d) {
        in[d] = x.shape()[2 + d];
        I *= in[d];
        O *= out[d];
    }
    auto xv = x.values();
    std::vector<double> y(NC * O);
    for (size_t nc = 0; nc < NC; ++nc) {
        for (size_t flat_o = 0; flat_o < O; ++flat_o) {
            auto o = unflatten(flat_o, out);
            std::vector<size_t> extent(sp);
            std::vector<long> first(sp);
            size_t full = 1;
            for (size_t d = 0; d < sp; ++d) {
                auto [a, b] = window_of(d, o[d]);
                first[d] = a;
                extent[d] = size_t(b - a);
                full *= extent[d];
            }
            double best = -std::numeric_limits<double>::infinity(), sum = 0;
            size_t count = 0;
            for (size_t t = 0; t < full; ++t) {
                auto tt = unflatten(t, extent);
                size_t flat_i = 0;
                bool inside = true;
                for (size_t d = 0; d < sp; ++d) {
                    long pos = first[d] + long(tt[d]);
                    inside = inside && pos >= 0 && pos < long(in[d]);
                    flat_i = flat_i * in[d] + (inside ? size_t(pos) : 0);
                }
                if (!inside)
                    continue;
                double v = xv[nc * I + flat_i];
                best = std::max(best, v);
                sum += v;
                ++count;
            }
            y[nc * O + flat_o] = mode == PoolRef::Max              ? best
                                 : mode == PoolRef::AverageInclPad ? sum / double(full)
                                                                   : sum / double(count);
        }
    }
    TensorShape ys = x.shape();
    for (size_t d = 0; d < sp; ++d)
        ys[2 + d] = out[d];
    return HostTensor::from(ys, y);
}

// Distinct values (a shuffled ramp with gaps of `gap`), so that max pooling has no ties and its
// finite differences are exact for steps below gap / 2.
inline HostTensor distinct_values(const TensorShape& s, std::mt19937& rng, double gap = 0.1) {
    std::vector<double> v(s.total_nr_elems());
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = (double(i) - double(v.size()) / 2) * gap;
    std::shuffle(v.begin(), v.end(), rng);
    return HostTensor::from(s, v);
}

}  // namespace neomeg::dnn::test
