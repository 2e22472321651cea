// What LayerNorm and GroupNorm (which runs on LayerNorm's row kernels) both hand those kernels:
// the tensors' pointers, dtypes and collapsed layouts. Each op fills in its own row geometry.
#pragma once

#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {

inline kern::Strided flat(const TensorLayout& l) {
    return collapse_jointly({l})[0];
}

// src, the statistics and, where given, the affine weight and bias of `a`.
inline void set_norm_tensors(kern::LayerNormArgs& a, const TensorND& src, const TensorND& mean,
                             const TensorND& rstd, const TensorND* weight, const TensorND* bias) {
    a.src = src.raw_ptr();
    a.src_dt = to_kern(src.layout.dtype);
    a.src_layout = flat(src.layout);
    if (weight) {
        a.weight = weight->raw_ptr();
        a.weight_dt = to_kern(weight->layout.dtype);
        a.weight_layout = flat(weight->layout);
    }
    if (bias) {
        a.bias = bias->raw_ptr();
        a.bias_layout = flat(bias->layout);
    }
    a.mean = mean.raw_ptr();
    a.stat_dt = to_kern(mean.layout.dtype);
    a.mean_layout = flat(mean.layout);
    a.rstd = rstd.raw_ptr();
    a.rstd_layout = flat(rstd.layout);
}

}  // namespace neomeg::dnn::cuda
