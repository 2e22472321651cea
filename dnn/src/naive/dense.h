// Whole-tensor copies between a strided float tensor and a dense row-major vector of doubles, for
// naive kernels whose index arithmetic is clearest on dense arrays (the deformable and
// region-restricted convolutions).
#pragma once

#include <vector>

#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {

inline std::vector<double> load_dense(const TensorND& t) {
    std::vector<double> v;
    v.reserve(t.layout.total_nr_elems());
    for_each_offset(t.layout, [&](ptrdiff_t off) { v.push_back(load_scalar(t, off).f); });
    return v;
}

// Writes v (t's elements in row-major order) into t, each rounded once to t's dtype.
inline void store_dense(const TensorND& t, const std::vector<double>& v) {
    size_t i = 0;
    for_each_offset(t.layout,
                    [&](ptrdiff_t off) { store_scalar(t, off, Scalar::of_float(v[i++])); });
}

}  // namespace neomeg::dnn::naive
