#include "neomeg/op/view_op_def.h"

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg {

ViewOpDefBase::ViewOpDefBase() = default;
ViewOpDefBase::~ViewOpDefBase() = default;

std::vector<dnn::TensorLayout> ViewOpDefBase::infer_layouts(
        CompNode, std::span<const dnn::TensorLayout> inputs,
        std::span<const dnn::TensorShape> output_shapes) const {
    NM_THROW_IF(inputs.size() != 1, ParamError, to_string(), ": expects 1 input, got ",
                inputs.size());
    NM_THROW_IF(!output_shapes.empty(), ParamError, to_string(), ": takes no preset output shapes");
    // A contiguous input always has a view; the output is a contiguous tensor of its shape.
    dnn::TensorLayout src(inputs[0], inputs[0].dtype);
    auto v = view_layout(src);
    NM_THROW_IF(!v, Error, to_string(), ": no view of contiguous ", src.to_string());
    return {dnn::TensorLayout(v->layout, v->layout.dtype)};
}

size_t ViewOpDefBase::workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                                         std::span<const dnn::TensorLayout>) const {
    return 0;
}

void ViewOpDefBase::exec(CompNode cn, std::span<const dnn::TensorND> inputs,
                         std::span<const dnn::TensorND> outputs, dnn::Workspace) const {
    const dnn::TensorND& src = inputs[0];
    auto v = view_layout(src.layout);
    NM_THROW_IF(!v, Error, to_string(), ": no view of ", src.layout.to_string());
    dnn::TensorND view(static_cast<std::byte*>(src.raw_ptr()) +
                               v->offset * static_cast<ptrdiff_t>(src.layout.dtype.size()),
                       v->layout);
    dnn::Handle* handle = cn.dnn_handle();
    if (handle != m_relayout_handle) {
        m_relayout = handle->create_operator<dnn::Relayout>();
        m_relayout_handle = handle;
    }
    m_relayout->exec_unchecked({&view, 1}, outputs.first(1));
}

}  // namespace neomeg
