// What the x86 ROIAlign and ROIPooling kernels share: the rois read once per call (checked as
// naive checks them), NCHW addressing by strides, and whether a call is one they take (float32
// tensors; naive converts other dtypes per element).
#pragma once

#include <array>
#include <span>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/common/roi.h"

namespace neomeg::dnn::x86::roi_x86 {

struct Nchw {
    std::array<ptrdiff_t, 4> s;
    explicit Nchw(const TensorLayout& l) : s{l.stride[0], l.stride[1], l.stride[2], l.stride[3]} {}
    ptrdiff_t plane(size_t n, size_t c) const {
        return static_cast<ptrdiff_t>(n) * s[0] + static_cast<ptrdiff_t>(c) * s[1];
    }
    ptrdiff_t at(int64_t h, int64_t w) const { return h * s[2] + w * s[3]; }
};

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

}  // namespace neomeg::dnn::x86::roi_x86
