// run_op(): the eager hot path's dispatch on the kind of op (one switch, one virtual call to the
// op's cached dnn operator).
#include "exec.h"
#include "neomeg/imperative/trace.h"

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
