// Layout rules of the view operators (imperative/ops/defs/views.py). Each returns the output
// view of `src`, or nullopt when src's strides cannot express it without a copy; bad params
// throw ShapeError/ParamError naming `def`.
#pragma once

#include <optional>

#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/view_params.h"

namespace neomeg::imperative::param {

std::optional<ViewLayout> view_layout(const OpDef& def, const Reshape& p,
                                      const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout(const OpDef& def, const Broadcast& p,
                                      const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout(const OpDef& def, const Dimshuffle& p,
                                      const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout(const OpDef& def, const AddAxis& p,
                                      const dnn::TensorLayout& src);
std::optional<ViewLayout> view_layout(const OpDef& def, const RemoveAxis& p,
                                      const dnn::TensorLayout& src);

}  // namespace neomeg::imperative::param
