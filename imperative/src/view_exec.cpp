// A view op on an eager tensor: the output shares the input's storage when the strides allow it.
#include "exec.h"

namespace neomeg::imperative {

std::vector<Tensor> run_view_op(const ViewOpDefBase& op, std::span<const Tensor> inputs) {
    NM_THROW_IF(inputs.size() != 1, ParamError, op.to_string(), ": expects 1 input, got ",
                inputs.size());
    const Tensor& src = inputs[0];
    NM_THROW_IF(!src.valid(), ParamError, op.to_string(), ": input 0 is an empty tensor handle");
    if (auto v = op.view_layout(src.layout()))
        return {src.view(v->layout, v->offset * static_cast<ptrdiff_t>(src.dtype().size()))};
    Tensor c = src.contiguous();
    auto v = op.view_layout(c.layout());
    NM_THROW_IF(!v, Error, op.to_string(), ": no view of contiguous ", c.layout().to_string());
    return {c.view(v->layout, v->offset * static_cast<ptrdiff_t>(c.dtype().size()))};
}

}  // namespace neomeg::imperative
