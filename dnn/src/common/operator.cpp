#include "neomeg/dnn/operator.h"

#include <vector>

namespace neomeg::dnn {

void OperatorBase::check_num_inputs(std::span<const TensorLayout> inputs) const {
    int n = num_inputs();
    NM_REQUIRE(ShapeError, n < 0 || inputs.size() == static_cast<size_t>(n), "expects ", n,
               " inputs, got ", inputs.size());
}

std::string OperatorBase::layouts_str(std::span<const TensorLayout> layouts) {
    std::string s;
    for (auto& l : layouts)
        s += (s.empty() ? "" : ", ") + l.to_string();
    return s;
}

void OperatorBase::check_exec(std::span<const TensorLayout> inputs,
                              std::span<const TensorLayout> outputs, size_t workspace_in_bytes) {
    check_num_inputs(inputs);
    NM_REQUIRE(ShapeError, outputs.size() == num_outputs(), "expects ", num_outputs(),
               " outputs, got ", outputs.size());
    // Generator ops read their output shapes from what comes in, so start from the given outputs.
    std::vector<TensorLayout> expect(outputs.begin(), outputs.end());
    deduce_layout(inputs, expect);
    for (size_t i = 0; i < outputs.size(); ++i) {
        NM_REQUIRE(DTypeError, expect[i].dtype == outputs[i].dtype, "output ", i, " has dtype ",
                   outputs[i].dtype.name(), ", expected ", expect[i].dtype.name(),
                   " (inputs: ", layouts_str(inputs), ")");
        NM_REQUIRE(ShapeError, expect[i].eq_shape(outputs[i]), "output ", i, " has shape ",
                   outputs[i].TensorShape::to_string(), ", expected ",
                   expect[i].TensorShape::to_string(), " (inputs: ", layouts_str(inputs), ")");
    }
    size_t need = get_workspace_in_bytes(inputs, outputs);
    NM_REQUIRE(ShapeError, workspace_in_bytes >= need, "needs ", need,
               " bytes of workspace, given ", workspace_in_bytes);
}

void OperatorBase::exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                        Workspace workspace) {
    std::vector<TensorLayout> layouts;
    layouts.reserve(inputs.size() + outputs.size());
    for (auto& t : inputs)
        layouts.push_back(t.layout);
    for (auto& t : outputs)
        layouts.push_back(t.layout);
    std::span<const TensorLayout> all(layouts);
    check_exec(all.first(inputs.size()), all.subspan(inputs.size()), workspace.size);
    for (size_t i = 0; i < outputs.size(); ++i)
        NM_REQUIRE(ShapeError, outputs[i].raw_ptr() || outputs[i].layout.is_empty(), "output ", i,
                   " has a null pointer");
    exec_unchecked(inputs, outputs, workspace);
}

}  // namespace neomeg::dnn
