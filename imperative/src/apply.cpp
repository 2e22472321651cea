#include "neomeg/imperative/apply.h"

#include "neomeg/imperative/dtr.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/trace.h"

namespace neomeg::imperative {

std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs) {
    if (dtr::active()) [[unlikely]]
        return dtr::apply(op, inputs, {});
    std::vector<Tensor> outputs = run_op(op, inputs);
    // One branch each on the hot path when nothing records.
    if (GradKey::any_active())
        GradKey::record(op, inputs, outputs);
    if (TraceRecorder::any_active()) [[unlikely]]
        TraceRecorder::current()->on_apply(op, inputs, outputs, {});
    return outputs;
}

std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const dnn::TensorShape> output_shapes) {
    if (dtr::active()) [[unlikely]]
        return dtr::apply(op, inputs, output_shapes);
    std::vector<Tensor> outputs = run_op_with_shapes(op, inputs, output_shapes);
    if (GradKey::any_active())
        GradKey::record(op, inputs, outputs);
    if (TraceRecorder::any_active()) [[unlikely]]
        TraceRecorder::current()->on_apply(op, inputs, outputs, output_shapes);
    return outputs;
}

}  // namespace neomeg::imperative
