// A pooling case of the x86 pooling tests (pooling.cpp, max_pool_nan.cpp): src's shape and the
// window's geometry per spatial axis, its params and its dst's shape.
#pragma once

#include <cstdint>
#include <vector>

#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/params/pooling.h"

namespace neomeg::dnn::test {

struct PoolCase {
    TensorShape src;
    std::vector<int32_t> window, stride, padding;
};

inline param::Pooling pool_param(param::Pooling::Mode mode, const PoolCase& k) {
    param::Pooling p;
    p.mode = mode;
    p.window = k.window;
    p.stride = k.stride;
    p.padding = k.padding;
    return p;
}

inline TensorShape dst_shape(const PoolCase& k) {
    TensorShape d = k.src;
    for (size_t i = 0; i < k.window.size(); ++i)
        d[2 + i] = (k.src[2 + i] + 2 * size_t(k.padding[i]) - size_t(k.window[i])) /
                           size_t(k.stride[i]) +
                   1;
    return d;
}

}  // namespace neomeg::dnn::test
