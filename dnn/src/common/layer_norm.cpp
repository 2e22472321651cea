// Layout rules of LayerNormForward/Backward. The trailing normalized_dim axes of src form a row;
// weight and bias (inputs iff affine) have the trailing shape and src's dtype; mean and rstd
// have the leading shape (a scalar when every axis is normalised) and are float32 whatever src's
// dtype, so that backward sees the statistics forward computed.
#include "neomeg/dnn/operators/norm.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_normalized_dim(const OperatorBase& op, const TensorLayout& src, uint32_t n) {
    NM_OP_REQUIRE(op, ParamError, n >= 1 && n <= src.ndim, "normalized_dim ", n,
                  " must be in [1, ndim] for src ", src.to_string());
}

void check_stat(const OperatorBase& op, const TensorLayout& stat, const char* name,
                const TensorLayout& src, uint32_t n) {
    NM_OP_REQUIRE(op, DTypeError, stat.dtype == dtype::Float32, name, " ", stat.to_string(),
                  " is not float32");
    NM_OP_REQUIRE(op, ShapeError, stat.eq_shape(leading(src, n)), name, " ", stat.to_string(),
                  " does not have the leading shape ", leading(src, n).to_string(), " of src ",
                  src.to_string());
}

void check_affine(const OperatorBase& op, const TensorLayout& l, const char* name,
                  const TensorLayout& src, uint32_t n) {
    check_same_dtype(op, l, name, src, "src");
    NM_OP_REQUIRE(op, ShapeError, l.eq_shape(trailing(src, n)), name, " ", l.to_string(),
                  " does not have the normalised shape ", trailing(src, n).to_string(), " of src ",
                  src.to_string());
}

void check_eps(const OperatorBase& op, float eps) {
    // Written as a positive test so that NaN fails it.
    NM_OP_REQUIRE(op, ParamError, eps >= 0.f, "eps ", eps, " is negative or NaN");
}

}  // namespace

void LayerNormForward::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_count(*this, inputs, m_param.affine ? 3 : 1);
    check_eps(*this, m_param.eps);
    const TensorLayout& src = inputs[0];
    check_float(*this, src, "src");
    uint32_t n = m_param.normalized_dim;
    check_normalized_dim(*this, src, n);
    if (m_param.affine) {
        check_affine(*this, inputs[1], "weight", src, n);
        check_affine(*this, inputs[2], "bias", src, n);
    }
    outputs[0] = TensorLayout(src, src.dtype);
    outputs[1] = TensorLayout(leading(src, n), dtype::Float32);
    outputs[2] = TensorLayout(leading(src, n), dtype::Float32);
}

size_t LayerNormBackward::num_outputs() const {
    return m_param.affine ? 3 : 1;
}

void LayerNormBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    check_count(*this, inputs, m_param.affine ? 5 : 4);
    check_eps(*this, m_param.eps);
    const TensorLayout &diff = inputs[0], &src = inputs[1];
    check_float(*this, src, "src");
    check_same_dtype(*this, diff, "diff", src, "src");
    check_same_shape(*this, diff, "diff", src, "src");
    uint32_t n = m_param.normalized_dim;
    check_normalized_dim(*this, src, n);
    check_stat(*this, inputs[2], "mean", src, n);
    check_stat(*this, inputs[3], "rstd", src, n);
    outputs[0] = TensorLayout(src, src.dtype);
    if (m_param.affine) {
        check_affine(*this, inputs[4], "weight", src, n);
        outputs[1] = TensorLayout(inputs[4], src.dtype);
        outputs[2] = TensorLayout(inputs[4], src.dtype);
    }
}

}  // namespace neomeg::dnn
