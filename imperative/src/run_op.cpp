// run_op(): the eager hot path's dispatch on the kind of op (one switch, one virtual call to the
// op's cached dnn operator).
#include <optional>

#include "exec.h"
#include "neomeg/dnn/preset_shape.h"
#include "neomeg/imperative/trace.h"
#include "neomeg/op/dnn_op_def.h"

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

// The output of an op that forwards a contiguous input (its definition's forwards=..., ReshapeTo)
// as a view of that input, as an eager Reshape is (a trace's symbolic shapes reshape with
// ReshapeTo): its copy made a recording call hold more than the eager call (BERT-mini's attention
// heads, 24 MiB at the peak). The layout rule checks the preset shapes; the op's other inputs are
// the values they were read from, checked on the host by the kernels' own rule (preset_shape.h).
// nullopt where the kernel runs: a strided input, or a value not on the CPU.
std::optional<Tensor> forwarded_view(const DnnOpDefBase& op, std::span<const Tensor> inputs,
                                     std::span<const dnn::TensorShape> shapes) {
    const int forwarded = op.forwarded_input();
    if (forwarded == dnn::kForwardsNothing || size_t(forwarded) >= inputs.size())
        return std::nullopt;
    std::vector<dnn::TensorLayout> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].valid() || (i != size_t(forwarded) && inputs[i].comp_node().device_type() !=
                                                                     CompNode::DeviceType::CPU))
            return std::nullopt;
        in.push_back(inputs[i].layout());
    }
    const Tensor& src = inputs[size_t(forwarded)];
    if (!src.layout().is_contiguous())
        return std::nullopt;
    const dnn::TensorLayout out = op.infer_layouts(src.comp_node(), in, shapes).at(0);
    const auto type = static_cast<dnn::OpType>(op.id());
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (i == size_t(forwarded))
            continue;
        std::vector<int32_t> value(inputs[i].shape().total_nr_elems());
        inputs[i].to_host(value.data());
        dnn::TensorLayout contiguous(inputs[i].shape(), inputs[i].layout().dtype);
        dnn::check_preset_shape(type, dnn::TensorND(value.data(), contiguous), out);
    }
    return src.view(out);
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
    if (auto view = forwarded_view(static_cast<const DnnOpDefBase&>(op), inputs, shapes))
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
