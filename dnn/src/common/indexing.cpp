#include "src/common/indexing.h"

#include <algorithm>
#include <array>

namespace neomeg::dnn::indexing {

size_t normalize_axis(int32_t axis, size_t ndim, const Who& who) {
    auto n = static_cast<int64_t>(ndim);
    NM_THROW_IF(axis < -n || axis >= n, ParamError, who, ": axis ", axis,
                " is out of range for a tensor of ", ndim, " dims");
    return static_cast<size_t>(axis < 0 ? axis + n : axis);
}

void check_index_dtype(const TensorLayout& index, const char* what, const Who& who) {
    NM_THROW_IF(index.dtype != dtype::Int32, DTypeError, who, ": ", what, " must be int32, got ",
                index.to_string());
}

MultiAxisPlan plan_multi_axis(const TensorLayout& data, std::span<const TensorLayout> indices,
                              const std::vector<int32_t>& axes, const Who& who) {
    MultiAxisPlan plan;
    NM_THROW_IF(axes.empty(), ParamError, who, ": needs at least one indexed axis");
    NM_THROW_IF(indices.size() != axes.size(), ShapeError, who, ": ", axes.size(),
                " axes need as many index tensors, got ", indices.size());
    std::array<bool, TensorShape::MAX_NDIM> used{};
    for (size_t k = 0; k < axes.size(); ++k) {
        size_t ax = normalize_axis(axes[k], data.ndim, who);
        NM_THROW_IF(used[ax], ParamError, who, ": axis ", axes[k], " is indexed twice");
        used[ax] = true;
        plan.axes[k] = ax;
    }
    bool one_shape = true;
    for (size_t k = 0; k < indices.size(); ++k) {
        NM_THROW_IF(indices[k].dtype != dtype::Int32, DTypeError, who, ": indices[", k,
                    "] must be int32, got ", indices[k].to_string());
        one_shape = one_shape && indices[k].eq_shape(indices[0]);
    }
    if (one_shape) {  // the common case, without broadcast_shapes' vector
        plan.index_shape = indices[0];
    } else {
        try {
            plan.index_shape =
                    broadcast_shapes(std::vector<TensorShape>(indices.begin(), indices.end()));
        } catch (const ShapeError& e) {
            throw ShapeError(str_cat(who, ": index tensors do not broadcast: ", e.what()));
        }
    }

    const auto first = plan.axes.begin(), last = first + axes.size();
    auto [lo, hi] = std::minmax_element(first, last);
    bool adjacent = *hi - *lo + 1 == axes.size();
    // NumPy keeps the index block where the indexed axes were only when they are adjacent.
    plan.index_begin = adjacent ? *lo : 0;
    size_t rest = data.ndim - axes.size();
    size_t ndim = rest + plan.index_shape.ndim;
    NM_THROW_IF(ndim > TensorShape::MAX_NDIM, ShapeError, who, ": indexing ", data.to_string(),
                " gives ", ndim, " dims, more than ", TensorShape::MAX_NDIM);
    plan.result.ndim = ndim;
    plan.data_axis.fill(-1);
    size_t out = 0;
    bool placed = false;
    auto place_index_block = [&] {
        for (size_t j = 0; j < plan.index_shape.ndim; ++j)
            plan.result.shape[out++] = plan.index_shape.shape[j];
        placed = true;
    };
    for (size_t d = 0; d < data.ndim; ++d) {
        if (!placed && out == plan.index_begin)
            place_index_block();
        if (used[d])
            continue;
        plan.result.shape[out] = data.shape[d];
        plan.data_axis[out++] = static_cast<int>(d);
    }
    if (!placed)
        place_index_block();
    return plan;
}

}  // namespace neomeg::dnn::indexing
