// Padding's forward in REFLECT and REPLICATE mode in one pass over a contiguous dst: per dst row,
// the front border, the run of the src row it holds, the back border; a row that lies in the border
// along an outer axis is a copy of the src row it mirrors or repeats. Copying the interior and then
// the border slabs from it writes dst twice (docs/x86-backend-log.md, "Padding in one pass").
// CONSTANT mode has a kernel of its own (padding_constant_hwy.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/parallel.h"
#include "src/x86/stream_copy_hwy.h"

namespace neomeg::dnn::x86 {

// The src offsets (in elements) that a padded tensor's indices take along each axis.
struct PadRows {
    size_t ndim = 0, rows = 1, width = 0, front = 0, inner = 0;
    std::array<size_t, TensorLayout::MAX_NDIM> shape{}, start{};
    // Axis k's dst index j reads src at offsets[start[k] + j]; the last axis holds each column's
    // offset within its src row.
    std::vector<ptrdiff_t> offsets;

    // `source` maps (n, front, j) to the src index that dst index j copies.
    template <class Source>
    PadRows(const TensorLayout& src, const TensorLayout& dst, const param::Padding& p,
            Source&& source)
        : ndim(dst.ndim) {
        for (size_t k = 0; k < ndim; ++k) {
            shape[k] = dst.shape[k];
            start[k] = offsets.size();
            auto n = static_cast<int64_t>(src.shape[k]), f = int64_t(p.front_offsets[k]);
            for (size_t j = 0; j < dst.shape[k]; ++j)
                offsets.push_back(static_cast<ptrdiff_t>(source(n, f, static_cast<int64_t>(j))) *
                                  src.stride[k]);
            if (k + 1 < ndim)
                rows *= dst.shape[k];
        }
        width = dst.shape[ndim - 1];
        front = static_cast<size_t>(p.front_offsets[ndim - 1]);
        inner = src.shape[ndim - 1];
    }

    // Writes dst (dense, elements of T) from src (not empty), rows split across the threads.
    template <class T>
    void write(const T* src, T* dst) const {
        parallel_ranges(rows, rows * width, kParallelGrain, [&](size_t b, size_t e) {
            // Row r's index over the outer axes and the src offset of its row, kept as r steps.
            std::array<size_t, TensorLayout::MAX_NDIM> idx{};
            ptrdiff_t off = 0;
            for (size_t k = ndim - 1, rest = b; k-- > 0;) {
                idx[k] = rest % shape[k];
                rest /= shape[k];
                off += offsets[start[k] + idx[k]];
            }
            const ptrdiff_t* cols = offsets.data() + start[ndim - 1];
            for (size_t r = b; r < e; ++r) {
                write_row(src + off, dst + r * width, cols);
                for (size_t k = ndim - 1; k-- > 0;) {
                    off -= offsets[start[k] + idx[k]];
                    if (++idx[k] == shape[k])
                        idx[k] = 0;
                    off += offsets[start[k] + idx[k]];
                    if (idx[k] != 0)
                        break;
                }
            }
        });
    }

private:
    template <class T>
    void write_row(const T* s, T* d, const ptrdiff_t* cols) const {
        const size_t back = front + inner;
        for (size_t j = 0; j < front; ++j)
            d[j] = s[cols[j]];
        for (size_t j = back; j < width; ++j)
            d[j] = s[cols[j]];
        // The src row's run is dense (the caller checks its stride); memcpy becomes rep movsb
        // above 2 KiB, slow into a run at another offset within its line than its source.
        const size_t bytes = inner * sizeof(T);
        if (bytes < 2048)
            std::memcpy(d + front, s, bytes);
        else
            copy_bytes(d + front, s, bytes);
    }
};

}  // namespace neomeg::dnn::x86
