// What the x86 ROIAlign and ROIPooling kernels share: the rois read once per call (checked as
// naive checks them), whether a call is one they take (float32 tensors; naive converts other
// dtypes per element; Remap and WarpPerspective take the same), and the split of the forward's
// (roi, channel) planes and the check of the backward's argmax indices.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/common/roi.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86::roi_x86 {

// Each roi's five values in double with its image index, which must name an image of the batch
// (the error naive gives otherwise). rois is float32.
struct RoiRow {
    double r[5];
    size_t image;
};

inline std::vector<RoiRow> read_rois(const TensorND& rois, size_t batch, const std::string& who) {
    const auto* p = static_cast<const float*>(rois.raw_ptr());
    std::vector<RoiRow> out(rois.layout[0]);
    for (size_t k = 0; k < out.size(); ++k) {
        for (size_t j = 0; j < 5; ++j)
            out[k].r[j] = p[static_cast<ptrdiff_t>(k) * rois.layout.stride[0] +
                            static_cast<ptrdiff_t>(j) * rois.layout.stride[1]];
        int64_t b = roi::batch_index(out[k].r[0], batch);
        NM_THROW_IF(b < 0, IndexError, roi::bad_batch_message(who, k, out[k].r[0], batch));
        out[k].image = static_cast<size_t>(b);
    }
    return out;
}

// Whether every float tensor of the call is float32 (index is int32 by the operator's rule).
inline bool all_float32(std::span<const TensorND> a, std::span<const TensorND> b) {
    for (auto ts : {a, b})
        for (const TensorND& t : ts)
            if (t.layout.dtype.is_float() && t.layout.dtype != dtype::Float32)
                return false;
    return true;
}

// Calls plane(state, k, c) for every (roi k, channel c) of the forward across OpenMP threads,
// after prepare(k, state) has filled the thread's State with roi k's geometry (once per roi and
// thread: a thread's units run roi by roi). `work` is the loop's total work.
template <class State, class Prepare, class Plane>
void roi_planes(size_t rois, size_t channels, size_t work, Prepare&& prepare, Plane&& plane) {
    parallel_ranges(rois * channels, work, kParallelGrain, [&](size_t b, size_t e) {
        State state;
        size_t have = SIZE_MAX;
        for (size_t u = b; u < e; ++u) {
            size_t k = u / channels;
            if (have != k)
                prepare(have = k, state);
            plane(state, k, u % channels);
        }
    });
}

// Calls check(k, ph, pw, v) with every value v of a backward's index tensor (K, C, PH, PW),
// before any thread starts: the error naive gives for a bad index.
template <class Check>
void check_index(const TensorND& index, Check&& check) {
    const Nchw ip(index.layout);
    const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
    for (size_t k = 0; k < index.layout[0]; ++k)
        for (size_t c = 0; c < index.layout[1]; ++c)
            for (size_t ph = 0; ph < index.layout[2]; ++ph)
                for (size_t pw = 0; pw < index.layout[3]; ++pw)
                    check(k, ph, pw,
                          idx[ip.plane(k, c) +
                              ip.at(static_cast<int64_t>(ph), static_cast<int64_t>(pw))]);
}

// The rois of each image, in order: the backward's planes add them in naive's order.
inline std::vector<std::vector<size_t>> rois_of_images(const std::vector<RoiRow>& rois,
                                                       size_t batch) {
    std::vector<std::vector<size_t>> of(batch);
    for (size_t k = 0; k < rois.size(); ++k)
        of[rois[k].image].push_back(k);
    return of;
}

}  // namespace neomeg::dnn::x86::roi_x86
