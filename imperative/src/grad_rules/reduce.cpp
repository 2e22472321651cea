// Backward rules of Reduce and TypeCvt.
#include "neomeg/op/defs/reduce.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/trace.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "ops_util.h"

namespace neomeg::imperative {

// MAX, MIN and PRODUCT (scan_sort.cpp).
std::vector<Tensor> reduce_more_grad(const OpDef&, std::span<const Tensor>, std::span<const Tensor>,
                                     std::span<const Tensor>, std::span<const bool>);

namespace {

using namespace grad_util;

std::vector<Tensor> reduce_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor> y, std::span<const Tensor> dy,
                                std::span<const bool> needs) {
    const auto& p = static_cast<const ops::Reduce&>(def).param();
    using RMode = dnn::param::Reduce::Mode;
    const Tensor& src = x[0];
    switch (p.mode) {
        case RMode::SUM:
            return {broadcast_to(dy[0], src.shape())};
        case RMode::MEAN: {
            size_t axis = p.axis < 0 ? p.axis + src.shape().ndim : p.axis;
            Tensor n = scalar_like(dy[0], static_cast<float>(src.shape()[axis]));
            return {broadcast_to(elemwise(Mode::TRUE_DIV, {dy[0], n}), src.shape())};
        }
        case RMode::SUM_SQR: {  // d sum(x^2) = 2 x dy
            Tensor two_x = elemwise(Mode::MUL, {src, scalar_like(src, 2)});
            return {elemwise(Mode::MUL, {two_x, broadcast_to(dy[0], src.shape())})};
        }
        default:
            return reduce_more_grad(def, x, y, dy, needs);
    }
}

// The gradient of a row-major input is row-major (GradKey::backward makes it so for the tensors
// it differentiates): a channels-last dy of a 16-bit cast of a float32 parameter (autocast) is
// copied row-major here, in the narrower dtype, rather than after the cast.
std::vector<Tensor> type_cvt_grad(const OpDef&, std::span<const Tensor> x, std::span<const Tensor>,
                                  std::span<const Tensor> dy, std::span<const bool>) {
    Tensor g = dy[0];
    if (dnn::is_channels_last(g.layout()) && !dnn::is_channels_last(x[0].layout()) &&
        g.dtype().size() < x[0].dtype().size()) {
        g = g.contiguous();
        TraceRecorder::note_same_value_if_recording(dy[0], g);
    }
    return {type_cvt(g, x[0].dtype())};
}

}  // namespace

NM_REGISTER_GRAD(Reduce, reduce_grad);
NM_REGISTER_GRAD(TypeCvt, type_cvt_grad);

}  // namespace neomeg::imperative
