// run_op(): the eager hot path's dispatch on the kind of op (one switch, one virtual call to the
// op's cached dnn operator).
#include <optional>

#include "exec.h"
#include "neomeg/imperative/trace.h"
#include "neomeg/op/defs/tensor_shape.h"

namespace neomeg::imperative {
namespace {

const CustomOpDef& as_custom(const OpDef& op) {
    const auto* custom = dynamic_cast<const CustomOpDef*>(&op);
    NM_THROW_IF(!custom, NotSupportedError, op.to_string(),
                ": an op outside the registry runs eagerly only as a CustomOpDef");
    return *custom;
}

dnn::OperatorBase& dnn_operator_for(const OpDef& op, std::span<const Tensor> inputs) {
    NM_THROW_IF(inputs.empty(), ParamError, op.to_string(),
                ": needs at least one input; a generator op runs with run_generator()");
    NM_THROW_IF(!inputs[0].valid(), ParamError, op.to_string(),
                ": input 0 is an empty tensor handle");
    return static_cast<const DnnOpDefBase&>(op).dnn_operator(inputs[0].comp_node().dnn_handle());
}

// ReshapeTo of a contiguous CPU tensor as a view, as an eager Reshape is (a trace's symbolic
// shapes reshape with ReshapeTo): its copy made a recording call hold more than the eager call
// (BERT-mini's attention heads, 24 MiB at the peak). The layout rule checks the preset; the shape
// value (int32 {ndim}: the rule checked) is compared with it on the host, as the kernel does;
// nullopt where the kernel runs.
std::optional<Tensor> reshape_to_view(const OpDef& op, std::span<const Tensor> inputs,
                                      std::span<const dnn::TensorShape> shapes) {
    if (inputs.size() != 2 || !inputs[0].valid() || !inputs[1].valid() ||
        !inputs[0].layout().is_contiguous() ||
        inputs[1].comp_node().device_type() != CompNode::DeviceType::CPU)
        return std::nullopt;
    const dnn::TensorLayout in[] = {inputs[0].layout(), inputs[1].layout()};
    const dnn::TensorLayout out = op.infer_layouts(inputs[0].comp_node(), in, shapes).at(0);
    std::vector<int32_t> value(inputs[1].shape().total_nr_elems());
    inputs[1].to_host(value.data());
    for (size_t i = 0; i < out.ndim; ++i)
        NM_THROW_IF(
                value.size() != out.ndim || (value[i] != -1 && size_t(value[i]) != out.shape[i]),
                ShapeError, op.to_string(), ": shape holds ", value[i], " at ", i, " but dst is ",
                out.to_string());
    return inputs[0].view(out);
}

}  // namespace

std::vector<Tensor> run_op(const OpDef& op, std::span<const Tensor> inputs) {
    switch (op.kind()) {
        case OpKind::Dnn:
            return run_dnn_op(op, dnn_operator_for(op, inputs), inputs);
        case OpKind::View:
            return run_view_op(static_cast<const ViewOpDefBase&>(op), inputs);
        case OpKind::Custom:
            break;
    }
    return as_custom(op).run(inputs);
}

std::vector<Tensor> run_op_with_shapes(const OpDef& op, std::span<const Tensor> inputs,
                                       std::span<const dnn::TensorShape> shapes) {
    NM_THROW_IF(op.kind() != OpKind::Dnn, ParamError, op.to_string(),
                ": takes no preset output shapes");
    NM_THROW_IF(shapes.empty(), ParamError, op.to_string(),
                ": run_op_with_shapes needs output shapes");
    if (op.id() == ops::ReshapeTo::kId)
        if (auto view = reshape_to_view(op, inputs, shapes))
            return {std::move(*view)};
    return run_dnn_op(op, dnn_operator_for(op, inputs), inputs, shapes);
}

std::vector<Tensor> run_generator(const OpDef& op, std::span<const dnn::TensorShape> shapes,
                                  CompNode cn) {
    NM_THROW_IF(op.kind() != OpKind::Dnn, ParamError, op.to_string(), ": not a generator op");
    auto& dop = static_cast<const DnnOpDefBase&>(op).dnn_operator(cn.dnn_handle());
    std::vector<Tensor> outs = run_dnn_generator(op, dop, shapes, cn);
    if (TraceRecorder::any_active()) [[unlikely]]
        TraceRecorder::current()->on_generator(op, outs, shapes, cn);
    return outs;
}

}  // namespace neomeg::imperative
