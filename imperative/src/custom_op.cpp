// A CustomOpDef exists only eagerly: it has no params to store and no layout rule or kernel a
// graph could use.
#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

void CustomOpDef::set_param_field(std::string_view name, const ParamValue&) {
    throw dnn::ParamError(dnn::str_cat(to_string(), ": no param field named ", name));
}

std::vector<dnn::TensorLayout> CustomOpDef::infer_layouts(CompNode,
                                                          std::span<const dnn::TensorLayout>,
                                                          std::span<const dnn::TensorShape>) const {
    throw dnn::NotSupportedError(dnn::str_cat(to_string(), ": runs only eagerly, not in a graph"));
}

size_t CustomOpDef::workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                                       std::span<const dnn::TensorLayout>) const {
    throw dnn::NotSupportedError(dnn::str_cat(to_string(), ": runs only eagerly, not in a graph"));
}

void CustomOpDef::exec(CompNode, std::span<const dnn::TensorND>, std::span<const dnn::TensorND>,
                       dnn::Workspace) const {
    throw dnn::NotSupportedError(dnn::str_cat(to_string(), ": runs only eagerly, not in a graph"));
}

}  // namespace neomeg::imperative
