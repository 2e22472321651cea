// The walk shared by the x86 kernels that move elements along one indexed axis (Gather,
// IndexingOneHot, IndexingSetOneHot in gather.cpp; Scatter in scatter.cpp): a shape walked with
// three tensors' strides, one of which is offset along an axis by an index value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::x86 {

using Strides = std::array<ptrdiff_t, TensorLayout::MAX_NDIM>;

// The walk: dst's shape, the strides that address src (0 along ax), index and dst there, and
// src's stride along ax, which the index value multiplies.
struct GatherWalk {
    TensorLayout shape;
    Strides src{}, index{}, dst{};
    ptrdiff_t axis_stride = 0;
    int64_t axis_size = 0;
};

// Calls f(src offset without the indexed axis, index offset, dst offset, j) for positions of the
// outer axes [begin, end) and j along the last axis.
template <class F>
void walk(const GatherWalk& w, size_t begin, size_t end, F&& f) {
    size_t n = w.shape.ndim, last = n - 1, len = w.shape[last];
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    ptrdiff_t so = 0, io = 0, dof = 0;
    for (size_t d = last, rest = begin; d-- > 0;) {
        idx[d] = rest % w.shape[d];
        rest /= w.shape[d];
        auto i = static_cast<ptrdiff_t>(idx[d]);
        so += i * w.src[d];
        io += i * w.index[d];
        dof += i * w.dst[d];
    }
    for (size_t o = begin; o < end; ++o) {
        for (size_t j = 0; j < len; ++j) {
            auto jj = static_cast<ptrdiff_t>(j);
            f(so + jj * w.src[last], io + jj * w.index[last], dof + jj * w.dst[last]);
        }
        for (size_t d = last; d-- > 0;) {
            so += w.src[d];
            io += w.index[d];
            dof += w.dst[d];
            if (++idx[d] < w.shape[d])
                break;
            auto len_d = static_cast<ptrdiff_t>(w.shape[d]);
            so -= w.src[d] * len_d;
            io -= w.index[d] * len_d;
            dof -= w.dst[d] * len_d;
            idx[d] = 0;
        }
    }
}

inline size_t outer_count(const GatherWalk& w) {
    size_t c = 1;
    for (size_t d = 0; d + 1 < w.shape.ndim; ++d)
        c *= w.shape[d];
    return c;
}

inline bool indices_in_range(const GatherWalk& w, const int32_t* index) {
    bool ok = true;
    walk(w, 0, outer_count(w), [&](ptrdiff_t, ptrdiff_t io, ptrdiff_t) {
        int64_t v = index[io];
        ok = ok && v >= 0 && v < w.axis_size;
    });
    return ok;
}

}  // namespace neomeg::dnn::x86
