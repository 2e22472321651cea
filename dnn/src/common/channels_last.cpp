#include "neomeg/dnn/channels_last.h"

#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/layout_follows.h"

namespace neomeg::dnn {
namespace {

bool has_channels_last_rank(const TensorShape& s) {
    return s.ndim == 4 || s.ndim == 5;
}

// A view that repeats elements (stride 0 on an axis of size > 1): a broadcast operand however
// it was broadcast (Elemwise's own rule or an eager BroadcastTo view), which says nothing about
// dst's format.
bool repeats(const TensorLayout& l) {
    for (size_t i = 0; i < l.ndim; ++i)
        if (l[i] != 1 && l.stride[i] == 0)
            return true;
    return false;
}

bool same_strides(const TensorLayout& a, const TensorLayout& b) {
    for (size_t i = 0; i < a.ndim; ++i)
        if (a.stride[i] != b.stride[i])
            return false;
    return true;
}

}  // namespace

TensorLayout channels_last_layout(const TensorShape& shape, DType dtype) {
    NM_THROW_IF(!has_channels_last_rank(shape), ShapeError, "channels-last needs a 4-D or 5-D ",
                "shape, got ", shape.to_string());
    TensorLayout l(shape, dtype);
    ptrdiff_t step = 1;
    l.stride[1] = step;
    step *= static_cast<ptrdiff_t>(shape[1]);
    for (size_t d = shape.ndim; d-- > 2;) {
        l.stride[d] = step;
        step *= static_cast<ptrdiff_t>(shape[d]);
    }
    l.stride[0] = step;
    return l;
}

bool is_channels_last(const TensorLayout& l) {
    if (!has_channels_last_rank(l))
        return false;
    return same_strides(l, channels_last_layout(l, l.dtype)) &&
           !same_strides(l, TensorLayout(l, l.dtype));
}

void apply_layout_follows(OpType type, std::span<const TensorLayout> inputs,
                          std::span<TensorLayout> outputs) {
    for (size_t o = 0; o < outputs.size(); ++o) {
        int src = layout_follows(type, o);
        TensorLayout& out = outputs[o];
        if (src == kFollowsNothing || !has_channels_last_rank(out))
            continue;
        bool follow = false;
        if (src == kFollowsEveryInput) {
            // Channels-last wins over row-major, as MegEngine's format propagates from any
            // NHWC input: a gradient materialised row-major (a cast of a broadcast) would
            // otherwise turn a whole channels-last backward pass row-major.
            for (const TensorLayout& in : inputs)
                follow = follow || (in.eq_shape(out) && !repeats(in) && is_channels_last(in));
        } else {
            follow = static_cast<size_t>(src) < inputs.size() && is_channels_last(inputs[src]);
        }
        if (follow)
            out = channels_last_layout(out, out.dtype);
    }
}

}  // namespace neomeg::dnn
