// Layout rules of BatchNormForward/Backward. src is (N, C, ...) with channels on axis 1. The
// per-channel tensors (scale, bias, running and saved statistics) share one shape, {C} or
// {1, C, 1, ...} of src's rank, and one float dtype (the statistics dtype, scale's), which is
// float32 or src's dtype: MegEngine keeps float32 statistics for float16 activations.
#include "neomeg/dnn/operators/norm.h"
#include "src/common/batch_norm_layout.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

bool is_channel_shape(const TensorShape& p, const TensorShape& src) {
    if (p.ndim == 1)
        return p[0] == src[1];
    if (p.ndim != src.ndim)
        return false;
    for (size_t i = 0; i < p.ndim; ++i)
        if (p[i] != (i == 1 ? src[1] : 1))
            return false;
    return true;
}

// Checks src and the per-channel inputs from index `first`; returns the statistics dtype.
DType check_inputs(const OperatorBase& op, const TensorLayout& src,
                   std::span<const TensorLayout> per_channel, const char* const* names) {
    check_float(op, src, "src");
    NM_OP_REQUIRE(op, ShapeError, src.ndim >= 2, "src ", src.to_string(),
                  " needs at least 2 axes (N, C, ...)");
    const TensorLayout& first = per_channel[0];
    check_float(op, first, names[0]);
    NM_OP_REQUIRE(op, DTypeError, first.dtype == dtype::Float32 || first.dtype == src.dtype,
                  names[0], " ", first.to_string(), " is neither float32 nor src's dtype (src ",
                  src.to_string(), ")");
    for (size_t i = 0; i < per_channel.size(); ++i) {
        const TensorLayout& p = per_channel[i];
        NM_OP_REQUIRE(op, ShapeError, is_channel_shape(p, src), names[i], " ", p.to_string(),
                      " is not {C} or {1, C, 1, ...} for src ", src.to_string());
        NM_OP_REQUIRE(op, ShapeError, p.eq_shape(first), names[i], " ", p.to_string(), " and ",
                      names[0], " ", first.to_string(), " differ in shape");
        check_same_dtype(op, p, names[i], first, names[0]);
    }
    return first.dtype;
}

}  // namespace

void batch_norm_forward_layouts(const OperatorBase& op, const param::BatchNorm& param,
                                std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_count(op, inputs, 5);
    static constexpr const char* names[] = {"scale", "bias", "running_mean", "running_var"};
    const TensorLayout& src = inputs[0];
    DType stat = check_inputs(op, src, inputs.subspan(1), names);
    NM_OP_REQUIRE(op, ParamError, param.epsilon >= 0, "epsilon ", param.epsilon, " is negative");
    NM_OP_REQUIRE(op, ParamError, param.momentum >= 0 && param.momentum <= 1, "momentum ",
                  param.momentum, " is outside [0, 1]");
    // One value per channel trains as in MegEngine 1.13: the output is the bias, and the running
    // variance takes the unbiased batch variance 0 / 0, NaN.
    outputs[0] = TensorLayout(src, src.dtype);
    for (size_t i = 1; i < 5; ++i)
        outputs[i] = TensorLayout(inputs[1], stat);
}

void batch_norm_backward_layouts(const OperatorBase& op, std::span<const TensorLayout> inputs,
                                 std::span<TensorLayout> outputs) {
    check_count(op, inputs, 5);
    static constexpr const char* names[] = {"scale", "saved_mean", "saved_inv_std"};
    const TensorLayout &diff = inputs[0], &src = inputs[1];
    DType stat = check_inputs(op, src, inputs.subspan(2), names);
    check_same_dtype(op, diff, "diff", src, "src");
    check_same_shape(op, diff, "diff", src, "src");
    outputs[0] = TensorLayout(src, src.dtype);
    outputs[1] = TensorLayout(inputs[2], stat);
    outputs[2] = TensorLayout(inputs[2], stat);
}

void BatchNormForward::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    batch_norm_forward_layouts(*this, m_param, inputs, outputs);
}

void BatchNormBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    batch_norm_backward_layouts(*this, inputs, outputs);
}

}  // namespace neomeg::dnn
