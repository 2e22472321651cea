#include "neomeg/op/dnn_op_def.h"

namespace neomeg {

std::vector<dnn::TensorLayout> DnnOpDefBase::infer_layouts(
        CompNode cn, std::span<const dnn::TensorLayout> inputs,
        std::span<const dnn::TensorShape> output_shapes) const {
    dnn::OperatorBase& op = dnn_operator(cn.dnn_handle());
    std::vector<dnn::TensorLayout> outputs(op.num_outputs());
    if (!output_shapes.empty()) {
        NM_THROW_IF(output_shapes.size() != outputs.size(), ParamError, to_string(), ": ",
                    outputs.size(), " output shapes needed, got ", output_shapes.size());
        for (size_t i = 0; i < outputs.size(); ++i)
            static_cast<dnn::TensorShape&>(outputs[i]) = output_shapes[i];
    }
    op.deduce_layout(inputs, outputs);
    return outputs;
}

size_t DnnOpDefBase::workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                                        std::span<const dnn::TensorLayout> outputs) const {
    return dnn_operator(cn.dnn_handle()).get_workspace_in_bytes(inputs, outputs);
}

void DnnOpDefBase::exec(CompNode cn, std::span<const dnn::TensorND> inputs,
                        std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const {
    dnn_operator(cn.dnn_handle()).exec_unchecked(inputs, outputs, workspace);
}

}  // namespace neomeg
