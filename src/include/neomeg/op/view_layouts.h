// Layout rules of the view operators (src/ops/defs/views.py). Each returns the output view of
// `src`, or nullopt when src's strides cannot express it without a copy; bad params throw
// ShapeError/ParamError naming `def`.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>

#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_op_def.h"
#include "neomeg/op/view_params.h"

namespace neomeg::param {

std::optional<ViewLayout> view_layout_of(const OpDef& def, const Reshape& p,
                                         const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout_of(const OpDef& def, const Broadcast& p,
                                         const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout_of(const OpDef& def, const Dimshuffle& p,
                                         const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout_of(const OpDef& def, const AddAxis& p,
                                         const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout_of(const OpDef& def, const RemoveAxis& p,
                                         const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout_of(const OpDef& def, const Subtensor& p,
                                         const dnn::TensorLayout& src);

// Python's None in a Subtensor's begin, end and step.
inline constexpr int32_t kSubtensorNone = std::numeric_limits<int32_t>::min();

// What a Subtensor takes of one axis of src: `length` elements from `begin`, `step` apart; an
// index (drop) takes one and removes the axis. Axes the param does not name are whole.
struct SubtensorAxis {
    ptrdiff_t begin = 0;
    ptrdiff_t step = 1;
    size_t length = 0;
    bool drop = false;
};

// One per axis of a shape (the first ndim entries); no allocation on the eager hot path.
using SubtensorAxes = std::array<SubtensorAxis, dnn::TensorShape::MAX_NDIM>;

// The resolved items of `p` on `shape`, one per axis of shape: the bounds as Python's
// slice.indices(n) gives them. Subtensor's layout rule and its gradient both read this; bad
// params throw ParamError (IndexError for an index out of range) naming def.
SubtensorAxes resolve_subtensor(const OpDef& def, const Subtensor& p,
                                const dnn::TensorShape& shape);

}  // namespace neomeg::param
