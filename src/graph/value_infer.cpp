#include "neomeg/graph/value_infer.h"

#include <algorithm>

#include "neomeg/dnn/errors.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "neomeg/op/defs/tensor_shape.h"
#include "neomeg/op/defs/views.h"

namespace neomeg::graph {

std::optional<size_t> shape_value_input(const OpDef& op) {
    switch (op.id()) {
        case ops::ReshapeTo::kId:
        case ops::BroadcastTo::kId:
        case ops::TakePrefix::kId:
            return 1;
        default:
            return std::nullopt;
    }
}

std::vector<dnn::TensorShape> shapes_from_value(const OpDef& op,
                                                std::span<const dnn::TensorLayout> inputs,
                                                std::span<const int32_t> value) {
    NM_THROW_IF(inputs.size() < 2, ParamError, op.to_string(), ": 2 inputs needed, got ",
                inputs.size());
    const dnn::TensorLayout& src = inputs[0];
    auto fail = [&](const char* why) {
        std::string v = "[";
        for (size_t i = 0; i < value.size(); ++i)
            v += (i ? ", " : "") + std::to_string(value[i]);
        throw dnn::ShapeError(dnn::str_cat(op.to_string(), ": the value ", v, "] of input ",
                                           *shape_value_input(op), " ", why, " (src ",
                                           src.to_string(), ")"));
    };
    dnn::TensorShape dst;
    if (op.id() == ops::TakePrefix::kId) {
        if (value.size() != 1 || src.ndim == 0 || value[0] < 0 ||
            static_cast<size_t>(value[0]) > src.shape[0])
            fail("is not a count between 0 and src's axis 0");
        dst = src;
        dst.shape[0] = static_cast<size_t>(value[0]);
        return {dst};
    }
    if (value.size() > dnn::TensorShape::MAX_NDIM)
        fail("has too many dims");
    dst.ndim = value.size();
    int unknown = -1;
    size_t known = 1;
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] == -1 && op.id() == ops::ReshapeTo::kId && unknown < 0) {
            unknown = static_cast<int>(i);
            continue;
        }
        if (value[i] < 0)
            fail(op.id() == ops::ReshapeTo::kId ? "has a negative dim (or a second -1)"
                                                : "has a negative dim");
        dst.shape[i] = static_cast<size_t>(value[i]);
        known *= dst.shape[i];
    }
    if (unknown >= 0) {
        size_t total = src.total_nr_elems();
        if (known == 0 || total % known)
            fail("leaves no size for its -1");
        dst.shape[static_cast<size_t>(unknown)] = total / known;
    }
    return {dst};
}

std::vector<dnn::TensorShape> sample_shapes(const OpDef& op,
                                            std::span<const dnn::TensorLayout> inputs) {
    NM_THROW_IF(inputs.size() < 2, ParamError, op.to_string(), ": 2 inputs needed, got ",
                inputs.size());
    const dnn::TensorLayout& src = inputs[0];
    const dnn::TensorLayout& shape = inputs[1];
    if (op.id() == ops::TakePrefix::kId)
        return {src};
    // ReshapeTo/BroadcastTo: shape is {ndim}; the layout rule reports any other.
    size_t ndim = shape.ndim == 1 ? shape.shape[0] : 0;
    dnn::TensorShape dst;
    dst.ndim = std::min(ndim, dnn::TensorShape::MAX_NDIM);
    for (size_t i = 0; i < dst.ndim; ++i)
        dst.shape[i] = 1;
    if (op.id() == ops::ReshapeTo::kId) {
        if (dst.ndim)
            dst.shape[0] = src.total_nr_elems();
    } else {
        for (size_t i = 0; i < src.ndim && i < dst.ndim; ++i)
            dst.shape[dst.ndim - 1 - i] = src.shape[src.ndim - 1 - i];
    }
    return {dst};
}

bool computes_host_value(const OpDef& op) {
    switch (op.id()) {
        case ops::Elemwise::kId:
        case ops::Concat::kId:
        case ops::Split::kId:
        case ops::TypeCvt::kId:
        case ops::Reduce::kId:
        case ops::IndexingOneHot::kId:
        case ops::IndexingMultiAxisVec::kId:
        case ops::GetVarShape::kId:
        case ops::ReshapeTo::kId:
        case ops::BroadcastTo::kId:
        case ops::TakePrefix::kId:
        case ops::Reshape::kId:
        case ops::Broadcast::kId:
        case ops::Dimshuffle::kId:
        case ops::AddAxis::kId:
        case ops::RemoveAxis::kId:
        case ops::Subtensor::kId:
            return true;
        default:
            return false;
    }
}

}  // namespace neomeg::graph
