// Layout rules shared by the indexing operators (dnn/ops/defs/indexing.py). `who` is the
// operator's param_str(), which prefixes every message so that errors name the operator.
#pragma once

#include <string>
#include <vector>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::indexing {

// Wraps a possibly negative axis into [0, ndim); ParamError when it is outside [-ndim, ndim).
size_t normalize_axis(int32_t axis, size_t ndim, const std::string& who);

// DTypeError unless `index` is int32; `what` names the input ("index", "indices[1]").
void check_index_dtype(const TensorLayout& index, const char* what, const std::string& who);

// Where each axis of data[indices] comes from, for NumPy advanced indexing with one index tensor
// per entry of `axes`.
struct MultiAxisPlan {
    std::vector<size_t> axes;  // normalised, one per index tensor
    TensorShape index_shape;   // the index tensors broadcast together
    TensorShape result;        // shape of data[indices]
    size_t index_begin = 0;    // result axes [index_begin, index_begin + index_shape.ndim) are B's
    // For each result axis outside the index block, the data axis it walks; -1 inside the block.
    std::vector<int> data_axis;
};

// Validates data and the index layouts against `axes` and derives the plan; ShapeError names the
// layouts, ParamError the axes.
MultiAxisPlan plan_multi_axis(const TensorLayout& data, std::span<const TensorLayout> indices,
                              const std::vector<int32_t>& axes, const std::string& who);

}  // namespace neomeg::dnn::indexing
