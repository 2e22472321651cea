// Layout rules of GroupNormForward/Backward. src is (N, C, ...); axis 1 splits into `group`
// groups. weight and bias (inputs iff affine) are {C} in src's dtype; mean and rstd are
// {N, group} float32 whatever src's dtype, so that backward sees what forward computed.
#include "neomeg/dnn/operators/norm.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_src(const OperatorBase& op, const TensorLayout& src, uint32_t group) {
    check_float(op, src, "src");
    NM_OP_REQUIRE(op, ShapeError, src.ndim >= 2, "src ", src.to_string(),
                  " needs at least 2 axes (N, C, ...)");
    NM_OP_REQUIRE(op, ParamError, group >= 1 && src[1] % group == 0, "group ", group,
                  " must be positive and divide the channel count of src ", src.to_string());
}

void check_stat(const OperatorBase& op, const TensorLayout& stat, const char* name,
                const TensorLayout& src, uint32_t group) {
    NM_OP_REQUIRE(op, DTypeError, stat.dtype == dtype::Float32, name, " ", stat.to_string(),
                  " is not float32");
    NM_OP_REQUIRE(op, ShapeError, stat.eq_shape(TensorShape{src[0], group}), name, " ",
                  stat.to_string(), " is not {N, group} for src ", src.to_string());
}

void check_affine(const OperatorBase& op, const TensorLayout& l, const char* name,
                  const TensorLayout& src) {
    check_same_dtype(op, l, name, src, "src");
    NM_OP_REQUIRE(op, ShapeError, l.eq_shape(TensorShape{src[1]}), name, " ", l.to_string(),
                  " is not {C} for src ", src.to_string());
}

void check_eps(const OperatorBase& op, float eps) {
    // Written as a positive test so that NaN fails it.
    NM_OP_REQUIRE(op, ParamError, eps >= 0.f, "eps ", eps, " is negative or NaN");
}

}  // namespace

void GroupNormForward::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_count(*this, inputs, m_param.affine ? 3 : 1);
    check_eps(*this, m_param.eps);
    const TensorLayout& src = inputs[0];
    check_src(*this, src, m_param.group);
    if (m_param.affine) {
        check_affine(*this, inputs[1], "weight", src);
        check_affine(*this, inputs[2], "bias", src);
    }
    outputs[0] = TensorLayout(src, src.dtype);
    outputs[1] = TensorLayout({src[0], m_param.group}, dtype::Float32);
    outputs[2] = TensorLayout({src[0], m_param.group}, dtype::Float32);
}

size_t GroupNormBackward::num_outputs() const {
    return m_param.affine ? 3 : 1;
}

void GroupNormBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    check_count(*this, inputs, m_param.affine ? 5 : 4);
    check_eps(*this, m_param.eps);
    const TensorLayout &diff = inputs[0], &src = inputs[1];
    check_src(*this, src, m_param.group);
    check_same_dtype(*this, diff, "diff", src, "src");
    check_same_shape(*this, diff, "diff", src, "src");
    check_stat(*this, inputs[2], "mean", src, m_param.group);
    check_stat(*this, inputs[3], "rstd", src, m_param.group);
    outputs[0] = TensorLayout(src, src.dtype);
    if (m_param.affine) {
        check_affine(*this, inputs[4], "weight", src);
        outputs[1] = TensorLayout(inputs[4], src.dtype);
        outputs[2] = TensorLayout(inputs[4], src.dtype);
    }
}

}  // namespace neomeg::dnn
