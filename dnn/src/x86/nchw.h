// Addressing an NCHW tensor of any strides by (image, channel) plane and (row, column) within
// it, in elements: what the x86 vision kernels (ROI, Remap, WarpPerspective) index by.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::x86 {

struct Nchw {
    std::array<ptrdiff_t, 4> s;
    explicit Nchw(const TensorLayout& l) : s{l.stride[0], l.stride[1], l.stride[2], l.stride[3]} {}
    ptrdiff_t plane(size_t n, size_t c) const {
        return static_cast<ptrdiff_t>(n) * s[0] + static_cast<ptrdiff_t>(c) * s[1];
    }
    ptrdiff_t at(int64_t h, int64_t w) const { return h * s[2] + w * s[3]; }
};

}  // namespace neomeg::dnn::x86
