#include "neomeg/dnn/preset_shape.h"

#include <algorithm>

#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/op_types.h"

namespace neomeg::dnn {
namespace {

int32_t int_at(const TensorND& t, size_t i) {
    return static_cast<const int32_t*>(t.raw_ptr())[static_cast<ptrdiff_t>(i) * t.layout.stride[0]];
}

}  // namespace

void check_preset_shape(OpType type, const TensorND& value, const TensorLayout& dst) {
    switch (type) {
        case OpType::ReshapeTo:
        case OpType::BroadcastTo: {
            // Read only as far as both go; the layout rule checked that value holds dst.ndim.
            size_t n = std::min(dst.ndim, value.layout.ndim ? value.layout.shape[0] : 0);
            for (size_t i = 0; i < n; ++i) {
                int32_t v = int_at(value, i);
                bool wildcard = type == OpType::ReshapeTo && v == -1;
                NM_THROW_IF(!wildcard && int64_t(v) != int64_t(dst.shape[i]), ShapeError,
                            "shape holds ", v, " at ", i, " but dst is ", dst.to_string());
            }
            return;
        }
        case OpType::TakePrefix:
            NM_THROW_IF(dst.ndim == 0 || int64_t(int_at(value, 0)) != int64_t(dst.shape[0]),
                        ShapeError, "count holds ", int_at(value, 0), " but dst is ",
                        dst.to_string());
            return;
        default:
            throw ParamError(str_cat(op_type_name(type), " takes no preset dst shape"));
    }
}

}  // namespace neomeg::dnn
