// Layout rules of the view operators (src/ops/defs/views.py). Each returns the output view of
// `src`, or nullopt when src's strides cannot express it without a copy; bad params throw
// ShapeError/ParamError naming `def`.
#pragma once

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

}  // namespace neomeg::param
