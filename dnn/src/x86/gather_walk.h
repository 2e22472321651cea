// The walk shared by the x86 kernels that move elements along one indexed axis (Gather,
// IndexingOneHot, IndexingSetOneHot in gather.cpp; Scatter in scatter.cpp): a shape walked with
// three tensors' strides, one of which is offset along an axis by an index value.
#pragma once

#include <algorithm>
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

// Calls f(src offset without the indexed axis, index offset, dst offset) at the start of each row
// (the last axis) for positions of the outer axes [begin, end).
template <class F>
void walk_rows(const GatherWalk& w, size_t begin, size_t end, F&& f) {
    size_t last = w.shape.ndim - 1;
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
        f(so, io, dof);
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

// Calls f(src offset without the indexed axis, index offset, dst offset) for every element of the
// outer positions [begin, end).
template <class F>
void walk(const GatherWalk& w, size_t begin, size_t end, F&& f) {
    size_t last = w.shape.ndim - 1, len = w.shape[last];
    walk_rows(w, begin, end, [&](ptrdiff_t so, ptrdiff_t io, ptrdiff_t dof) {
        for (size_t j = 0; j < len; ++j) {
            auto jj = static_cast<ptrdiff_t>(j);
            f(so + jj * w.src[last], io + jj * w.index[last], dof + jj * w.dst[last]);
        }
    });
}

// w without its axes of size 1 (their offsets are always 0; one axis stays where all are 1). A
// walk whose last axis has size 1 (IndexingOneHot's dst keeps the picked axis as 1: a
// cross_entropy's pick from 1024x1000) called its row function once per element, 8 us for 1024
// elements on one Zen 4 thread; without it the next axis is one row.
inline GatherWalk without_unit_axes(const GatherWalk& w) {
    GatherWalk v = w;
    size_t n = 0;
    for (size_t d = 0; d < w.shape.ndim; ++d) {
        if (w.shape[d] == 1)
            continue;
        v.shape.shape[n] = w.shape[d];
        v.src[n] = w.src[d];
        v.index[n] = w.index[d];
        v.dst[n] = w.dst[d];
        ++n;
    }
    if (n == 0) {
        v.shape.shape[0] = 1;
        v.src[0] = v.index[0] = v.dst[0] = 0;
        n = 1;
    }
    v.shape.ndim = n;
    return v;
}

inline size_t outer_count(const GatherWalk& w) {
    size_t c = 1;
    for (size_t d = 0; d + 1 < w.shape.ndim; ++d)
        c *= w.shape[d];
    return c;
}

// Whether the `len` index values `stride` apart from `ip` all lie in [0, size). As uint32, a value
// v lies in [0, last] exactly when v and last - v (wrapping) both have bit 31 clear: or-ed over the
// row, plain integer operations that a unit-stride row vectorises (a compare per element did not).
inline bool row_in_range(const int32_t* ip, ptrdiff_t stride, size_t len, int64_t size) {
    if (size <= 0)
        return len == 0;
    const auto last = static_cast<uint32_t>(std::min<int64_t>(size - 1, INT32_MAX));
    uint32_t acc = 0;
    if (stride == 1) {
        for (size_t j = 0; j < len; ++j) {
            auto v = static_cast<uint32_t>(ip[j]);
            acc |= v | (last - v);
        }
    } else {
        for (size_t j = 0; j < len; ++j) {
            auto v = static_cast<uint32_t>(ip[static_cast<ptrdiff_t>(j) * stride]);
            acc |= v | (last - v);
        }
    }
    return acc >> 31 == 0;
}

inline bool indices_in_range(const GatherWalk& w, const int32_t* index) {
    size_t last = w.shape.ndim - 1;
    bool ok = true;
    walk_rows(w, 0, outer_count(w), [&](ptrdiff_t, ptrdiff_t io, ptrdiff_t) {
        ok = ok && row_in_range(index + io, w.index[last], w.shape[last], w.axis_size);
    });
    return ok;
}

}  // namespace neomeg::dnn::x86
